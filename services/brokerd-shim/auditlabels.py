"""A session's label as the audit log answered it: for a session the audit log knows but the ledger
holds no record for.

A release before the ledger's record was created at a session's first call wrote one only when a
session was raised, so after an upgrade every clean session it served has lines in the audit log and
no record. Its state is what its answered lines say: the strictest label among them (each allowed
call's outcome line, or its one line in those releases, and every refusal that carried a label).
When that cannot be known, the caller keeps the strictest state: a line naming the session that is
not an audit line, an allowed call with no outcome line (the call ran, its label was not written),
damage that names no session, or a file that cannot be read.

The files are read once, a line at a time (never a whole file), and only the lines of the sessions
asked about are parsed.
"""

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

# The audit log's months, a line's session field, the bound past which a line is damage (read on
# a piece at a time) and what of a field cut between two pieces is kept: as audit.py reads them.
from brokerd_shim.audit import FIELD_BYTES, LINE_BYTES, MONTH_FILE, SESSION_FIELD
from proto.files import open_read
from proto.labels import CLASS_RANK, Label, stricter

log = logging.getLogger("brokerd_shim.auditlabels")
BASE = Label(klass="private", untrusted=False)
DECISIONS = frozenset({"allow", "deny", "ask"})


@dataclass
class _Seen:
    label: Label = BASE
    lines: int = 0
    unknown: str | None = None  # why the label cannot be known
    waiting: dict[str, int] = field(default_factory=dict)  # allowed calls with no outcome yet


class Unknowable(Exception):
    """Every session's label is unknown (the log cannot be listed or read whole)."""


def answered_labels(folder: Path, sessions: set[str]) -> dict[str, tuple[Label | None, str]]:
    """For each of sessions: (the strictest label its audit lines answered with, how many lines),
    or (None, why it cannot be known). A session with no line at all is (None, "no line")."""
    seen = {session: _Seen() for session in sessions}
    try:
        _read_all(folder, seen)
    except Unknowable as e:
        return {session: (None, str(e)) for session in sessions}
    result: dict[str, tuple[Label | None, str]] = {}
    for session, s in seen.items():
        if s.unknown is None and any(s.waiting.values()):
            s.unknown = "an allowed call has no outcome line"
        if s.unknown is None and not s.lines:
            s.unknown = "no line"
        if s.unknown is not None:
            result[session] = (None, s.unknown)
        else:
            result[session] = (s.label, f"{s.lines} line(s)")
    return result


def _read_all(folder: Path, seen: dict[str, _Seen]) -> None:
    try:
        paths = sorted(p for p in folder.iterdir() if MONTH_FILE.match(p.name))
    except FileNotFoundError:
        return
    except OSError as e:
        raise Unknowable(f"{folder} cannot be listed ({e.strerror})") from None
    for path in paths:
        try:
            with open_read(path) as f:
                _read_file(path, f, seen)
        except OSError as e:
            raise Unknowable(f"{path} cannot be read ({e.strerror})") from None


def _read_file(path: Path, f: BinaryIO, seen: dict[str, _Seen]) -> None:
    wanted = {name.encode("utf-8"): name for name in seen}
    while line := f.readline(LINE_BYTES + 1):
        if len(line) > LINE_BYTES and not line.endswith(b"\n"):
            _damaged(path, f, line, wanted, seen)
            continue
        found = SESSION_FIELD.search(line)
        if found is None:
            if line.strip():
                raise Unknowable(f"{path} holds a damaged line naming no session")
            continue
        name = wanted.get(found.group(1))
        if name is not None:
            _take(name, seen[name], line)


def _damaged(
    path: Path, f: BinaryIO, piece: bytes, wanted: dict[bytes, str], seen: dict[str, _Seen]
) -> None:
    """A stretch with no line end for over LINE_BYTES: every session it names is unknown."""
    named = False
    while True:
        for raw in SESSION_FIELD.findall(piece):
            named = True
            if raw in wanted:
                seen[wanted[raw]].unknown = f"{path} holds a damaged stretch naming it"
        if piece.endswith(b"\n"):
            break
        more = f.readline(LINE_BYTES + 1)
        if not more:
            break
        piece = piece[-FIELD_BYTES:] + more
    if not named:
        raise Unknowable(f"{path} holds a damaged stretch naming no session")


def _take(session: str, s: _Seen, line: bytes) -> None:
    if s.unknown is not None:
        return
    try:
        record = json.loads(line)
        label = _check(record, session)
    except (ValueError, RecursionError):
        s.unknown = "a line of it is not an audit line"
        return
    s.lines += 1
    call = record["call_id"]
    if label is None:
        if record["decision"] == "allow":  # an allowed call's first line: its outcome follows
            s.waiting[call] = s.waiting.get(call, 0) + 1
        return
    if record["decision"] == "allow" and s.waiting.get(call):
        s.waiting[call] -= 1
    s.label = stricter(s.label, label)


def _check(record: object, session: str) -> Label | None:
    """The line's label (None when it has none); ValueError when it is not an audit line."""
    if (
        not isinstance(record, dict)
        or record.get("session") != session
        or not isinstance(record.get("call_id"), str)
        or record.get("decision") not in DECISIONS
        or not (record.get("ok") is None or isinstance(record.get("ok"), bool))
    ):
        raise ValueError("not an audit line")
    label = record.get("label")
    if label is None:
        if record["decision"] == "allow" and record["ok"] is not None:
            raise ValueError("an outcome with no label")
        return None
    if (
        not isinstance(label, dict)
        or set(label) != {"class", "untrusted"}
        or label["class"] not in CLASS_RANK
        or not isinstance(label["untrusted"], bool)
    ):
        raise ValueError("not a label")
    return Label(klass=label["class"], untrusted=label["untrusted"])
