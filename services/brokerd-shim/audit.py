"""The audit log: one line per decision, in {home}/audit/YYYY-MM.jsonl (UTC month).

A line: {"time", "session", "call_id", "tool", "grant", "grant_sha256", "decision", "ok", "label",
"reason"?}. decision is allow, deny or ask; grant and grant_sha256 name the grant that decided
(null when none did); label is the label answered with when something ran or the grant labelled
the answer, null for the shim's own refusals; ok says whether the answer carried an output.

An allowed call has two lines. The first, with ok and label null, is written before the call is
sent anywhere: a call whose permission cannot be recorded is refused as not run, which is then
true (a memory write answered as failed was not applied). The second holds the outcome and the
answered label, after the call; it is best effort, since the call has happened and its answer must
say so. A deny or an ask has its one line, before the answer. Every line is appended whole and
fsync'd, or cut back to where the file ended: a full disk never leaves a torn line. While the log
cannot be written, that is logged once, then at most every FAILING_LOG_INTERVAL seconds.

sessions_answered reads every line once at start: the ledger takes a session the audit log has
answered but that has no ledger record as one whose record was deleted (ledger.py).
"""

import datetime as dt
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path

from brokerd_shim.errors import AuditFailed
from proto.files import append_line, ensure_dir, open_read
from proto.labels import Label
from proto.messages import is_session_id
from proto.surrogates import json_line

log = logging.getLogger("brokerd_shim.audit")
MONTH_FILE = re.compile(r"^[0-9]{4}-[0-9]{2}\.jsonl\Z")
# A damaged line still names its session when this much of it survives.
CHUNK = 4 << 20
SESSION_FIELD = re.compile(rb'"session":"([^"\\]{1,200})"')
# The longest text SESSION_FIELD can match, with room to spare.
FIELD_BYTES = 256
# Far longer than any line brokerd writes: a stretch this long with no line end is damage (a
# sparse or cut file), scanned as it comes and not held whole.
LINE_BYTES = 64 << 10
# A full disk fails every call: its failure is logged again at most this often (seconds).
FAILING_LOG_INTERVAL = 300.0


@dataclass(frozen=True)
class AuditEntry:
    session: str
    call_id: str
    tool: str
    grant: str | None
    grant_sha256: str | None
    decision: str
    ok: bool | None
    label: Label | None
    reason: str | None = None

    def line(self, when: dt.datetime) -> str:
        record = {
            "time": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "session": self.session,
            "call_id": self.call_id,
            "tool": self.tool,
            "grant": self.grant,
            "grant_sha256": self.grant_sha256,
            "decision": self.decision,
            "ok": self.ok,
            "label": self.label.to_wire() if self.label is not None else None,
        }
        if self.reason is not None:
            record["reason"] = self.reason
        # A string the call brought (its tool, a refusal naming an argument) may hold half of a
        # surrogate pair, which has no UTF-8 form: written as JSON's escape, the line is still
        # written, and the decision audited.
        return json_line(record)


class AuditLog:
    """The month files under folder, written from one thread (the broker's writer)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._lost = 0  # lines not written since the log last took one
        self._logged = 0.0  # when a failure was last logged (time.monotonic)

    def month_file(self, when: dt.datetime) -> Path:
        return self.folder / f"{when:%Y-%m}.jsonl"

    def append(self, entry: AuditEntry, when: dt.datetime | None = None) -> None:
        """Append entry's line before the call runs or is refused: AuditFailed when it cannot be
        written, and then nothing has run."""
        reason = self._write(entry, when)
        if reason is not None:
            raise AuditFailed(
                f"brokerd-shim cannot write its audit log ({reason}); the call was not run"
            )

    def append_outcome(self, entry: AuditEntry, when: dt.datetime | None = None) -> bool:
        """Append the line of a call that has run, best effort: False when it cannot be written
        (the call's answer goes out all the same, true to what happened)."""
        return self._write(entry, when) is None

    def _write(self, entry: AuditEntry, when: dt.datetime | None) -> str | None:
        """None once the line is in the file, else why it is not."""
        when = when or dt.datetime.now(dt.UTC)
        path = self.month_file(when)
        try:
            ensure_dir(self.folder)
            append_line(path, entry.line(when))  # cut back whole on failure: no torn line
        except OSError as e:
            reason = e.strerror or str(e)
            self._failed(path, reason)
            return reason
        if self._lost:
            log.warning(
                "audit: %s is written again; %d line(s) could not be written before",
                path,
                self._lost,
            )
            self._lost = 0
        return None

    def _failed(self, path: Path, reason: str) -> None:
        self._lost += 1
        now = time.monotonic()
        if self._lost == 1 or now - self._logged >= FAILING_LOG_INTERVAL:
            self._logged = now
            log.error(
                "audit: cannot append to %s (%s); calls are refused until it can be written "
                "(%d line(s) not written so far; logged again at most every %d s)",
                path,
                reason,
                self._lost,
                FAILING_LOG_INTERVAL,
            )


def sessions_answered(folder: Path) -> set[str]:
    """Every session id the audit log under folder holds a line for."""
    sessions: set[str] = set()
    try:
        paths = sorted(p for p in folder.iterdir() if MONTH_FILE.match(p.name))
    except FileNotFoundError:
        return sessions
    except OSError as e:
        log.error("audit: %s cannot be listed (%s)", folder, e.strerror)
        return sessions
    for path in paths:
        try:
            found = _sessions_in(path)
        except OSError as e:
            log.error("audit: %s cannot be read (%s)", path, e.strerror)
            continue
        sessions.update(
            name
            for name in (raw.decode("utf-8", errors="replace") for raw in found)
            if is_session_id(name)
        )
    return sessions


def _sessions_in(path: Path) -> set[bytes]:
    """The raw session fields of one audit file, read in chunks cut at a line's end; NotRegular
    (an OSError) when it is a symbolic link, a FIFO or anything but a regular file."""
    found: set[bytes] = set()
    rest = b""
    stretches, within = 0, False  # stretches of over LINE_BYTES with no line end; rest is one
    # Never through a link, never waiting on a FIFO: start would hang before serving.
    with open_read(path) as f:
        while chunk := f.read(CHUNK):
            data = rest + chunk
            end = data.rfind(b"\n") + 1
            data, rest = data[:end], data[end:]
            found.update(SESSION_FIELD.findall(data))
            within = within and not end
            if len(rest) > LINE_BYTES:
                # Held whole, such a stretch would grow with the file, and be copied again for
                # every chunk. Its session fields are taken as a damaged line's are (a session
                # too many fails closed); only its end is kept, for a field the chunk cut.
                if not within:
                    stretches, within = stretches + 1, True
                found.update(SESSION_FIELD.findall(rest))
                rest = rest[-FIELD_BYTES:]
    found.update(SESSION_FIELD.findall(rest))
    if stretches:
        log.warning(
            "audit: %s holds %d stretch(es) of over %d bytes with no line end (damaged); "
            "the session names in them are taken all the same",
            path,
            stretches,
            LINE_BYTES,
        )
    return found
