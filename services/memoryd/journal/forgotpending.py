"""The staged writes a forget took away, as its journal line names them: "forgot": {..., "pending":
[the ids of the writes waiting for review whose lines it dropped from pending.jsonl]}, an empty
list when it dropped none.

A staged write lives only in pending.jsonl until the journal resolves it. A forget of a text that
a waiting write carries drops the write's line whole (it can never be accepted once its text is
forgotten), so without its id in the journal the id would be one memoryd handed out that neither
pending.jsonl holds nor the journal resolved: said as lost to damage or a hand edit, at every
pending, accept and start, with the advice to take its line back from a backup (which would bring
the forgotten text back). Named by the forget's line, it is resolved, by the owner.

A module of its own: the journal's index (byfile.py) and its rebuild (scan.pending_ids) find the
ids accept and reject resolved by their line's "pending" string; these sit in a list inside the
forget's "forgot", found here, and accept and reject of such an id name the forget's edit (edit_of).
Only a line whose action is "forget" counts, so that no other value can resolve a waiting write.

A memoryd older than the "pending" list took such writes away too, and its forget line has no
list (unnamed): a write handed out before such a line, that neither pending.jsonl holds nor the
journal resolves, was probably taken by it. Review says so (taker), never that its line was lost,
which would send the owner to a backup holding the text they forgot. This memoryd's forget
(data/forget.py) always writes the list, so a line of its own that took nothing is never the
taker: a write missing from before it is said lost, with the advice to take its line back from a
backup (it held no forgotten text). An older memoryd keeps the key it may not know ("forgot" is
read as any dict) and reads the empty list as naming no write, as it reads any list.
"""

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

from memoryd.journal import mapfile
from memoryd.journal.idform import EDIT_ID, PENDING_ID

KEY = b'"pending": ['  # json.dumps's own separators, as every journal line is written
ACTION = b'"action": "forget"'  # a quote inside a string is escaped, so only the key matches


def ids_in(data, start: int = 0, end: int | None = None) -> dict[str, str]:
    """The pending ids the forget lines of data[start:end] name (data: bytes or an mmap whose
    lines there start at start and end at newlines), each with its forget line's id, the later
    line's where two name one."""
    end = len(data) if end is None else end
    found: dict[str, str] = {}
    at = start
    while (hit := data.find(KEY, at, end)) != -1:
        before = data.rfind(b"\n", start, hit)
        first = start if before == -1 else before + 1
        last = data.find(b"\n", hit, end)
        last = end if last == -1 else last
        found.update(named(data[first:last]))
        at = last + 1
    return found


def named(raw: bytes) -> dict[str, str]:
    """The pending ids one journal line names as a forget's dropped writes, with the line's id;
    {} for any other line (or a damaged one)."""
    line = _forget_line(raw)
    if line is None:
        return {}
    ident, forgot, _ = line
    listed = forgot.get("pending")
    if not isinstance(listed, list):
        return {}
    return {p: ident for p in listed if isinstance(p, str) and PENDING_ID.match(p)}


def in_months(months: list[Path]) -> dict[str, str]:
    """ids_in of every month: what a restore carries over of the home's forgets, whose journal
    the archive's replaces (data/leftout.carried_over)."""

    found: dict[str, str] = {}
    for path in months:
        with mapfile.mapped(path) as data:
            if data.find(KEY) != -1:
                found.update(ids_in(data))
    return found


def edit_of(months: list[Path], pending_id: str) -> str | None:
    """The id of the newest forget line naming pending_id, searching the months newest first
    (asked only when accept or reject names such an id); None when none does."""

    for path in reversed(months):
        try:
            with mapfile.mapped(path) as data:
                found = ids_in(data) if data.find(KEY) != -1 else {}
        except OSError:  # a month unreadable now: the refusal names no edit rather than fails
            continue
        if pending_id in found:
            return found[pending_id]
    return None


@dataclass(frozen=True)
class Unnamed:
    """A forget line of an older memoryd, which has no "pending" list and so may have taken
    staged writes it does not name: its edit id, and when it was made."""

    edit: str
    time: dt.datetime

    @property
    def date(self) -> str:
        return f"{self.time:%Y-%m-%d}"


def unnamed(months: list[Path], since: str) -> list[Unnamed]:
    """The forget lines whose "forgot" has no "pending" list (an older memoryd's), in the months
    from since (YYYY-MM) on, oldest first (asked only when a staged write handed out is missing).
    This memoryd's forget (data/forget.py) writes the list even when empty: never among them."""

    found: list[Unnamed] = []
    for path in months:
        if path.stem < since:
            continue
        try:
            with mapfile.mapped(path) as data:
                found += _unnamed_in(data)
        except OSError:  # a month unreadable now: its forgets name no write rather than fail
            continue
    return sorted(found, key=lambda f: (f.time, f.edit))


def taker(forgets: list[Unnamed], handed_out: dt.datetime) -> Unnamed | None:
    """The first of forgets (oldest first) made at or after handed_out, the earliest a staged
    write can have been handed out: the forget that would have taken it first; None when none
    was made since."""
    return next((f for f in forgets if f.time >= handed_out), None)


def _unnamed_in(data) -> list[Unnamed]:
    """The forget lines of data (bytes or an mmap of a month) without a "pending" key: an older
    memoryd's. A line with the key, even an empty list, said which writes it took."""
    out: list[Unnamed] = []
    at = 0
    while (hit := data.find(ACTION, at)) != -1:
        first = data.rfind(b"\n", 0, hit) + 1
        last = data.find(b"\n", hit)
        last = len(data) if last == -1 else last
        line = _forget_line(data[first:last])
        made = None if line is None else _made(line[0], line[2].get("time"))
        if line is not None and made is not None and "pending" not in line[1]:
            out.append(Unnamed(line[0], made))
        at = last + 1
    return out


def moment(time: object) -> dt.datetime | None:
    """A line's time (journal.TIME_FORMAT, or any ISO time: UTC when it names no zone), or None
    when it is none."""
    if not isinstance(time, str):
        return None
    try:
        when = dt.datetime.fromisoformat(time)
    except ValueError:
        return None
    return when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when


def _made(ident: str, time: object) -> dt.datetime | None:
    """When a forget line was made: its time, or, when that does not read, the end of its id's
    day (a write handed out that day is then taken as handed out before it); None when neither
    is a time (a hand-edited line)."""
    when = moment(time)
    if when is not None:
        return when
    try:
        day = dt.datetime.fromisoformat(ident[:10]).replace(tzinfo=dt.UTC)
        return day + dt.timedelta(days=1, microseconds=-1)
    except (ValueError, OverflowError):
        return None


def _forget_line(raw: bytes) -> tuple[str, dict, dict] | None:
    """A journal line as a forget's (its id, its "forgot", the whole line), or None for any
    other line (or a damaged one)."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or value.get("action") != "forget":
        return None
    forgot, ident = value.get("forgot"), value.get("id")
    if not isinstance(forgot, dict) or not (isinstance(ident, str) and EDIT_ID.match(ident)):
        return None
    return ident, forgot, value
