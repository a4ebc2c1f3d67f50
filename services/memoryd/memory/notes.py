"""notes.md: memoryd's append-only file of experience (spec 3).

Each entry is a header line saying how it got there, then its text:

    § noted 2026-09-24T21:02Z in session mm-dh45qg · private · untrusted
    § moved 2026-09-24T20:14Z from memory.md in session mm-y73sxj3popgwumyccptb56p1ah
    § dropped 2026-09-24T20:14Z from memory.md in session mm-y73sxj3popgwumyccptb56p1ah
    § moved 2026-09-24T20:14Z from memory.md in session mm-y73sxj3popgwumyccptb56p1ah · secret

A moved or dropped entry carries the class of the session that wrote it in; the spec's header
without a class is private, so a class is written only when it is higher.

A text line that itself starts with "§" (or with the escape "\\") is written with a "\\" in front
and read back without it, so no text can forge a header: a planted "§ moved ..." line in a note
would otherwise come back from recall tagged identity. So a line that starts with "§" and is not a
header memoryd writes can only be a header damaged by hand: it starts an entry of its own, read
as an untrusted note (damaged), never as text of the entry above it, which would give the damaged
note that entry's label (an untrusted note's text recalled as a trusted, even identity, entry).
A header whose time is no time there is (2026-02-30T10:00Z, a typo) is damaged the same way: every
reader (recall, export, restore, the journal's checks) takes a note's time as a real one, so a
note keeps a time only when it is real; and memoryd writes every header with a four-digit year
(0999-09-24T21:02Z), so that what it writes it reads back.

Text before the first header (pasted in by hand) belongs to no note: it has no time, session or
label to be recalled under. It is skipped, and said (leading_said) as a damaged header is, so the
owner learns why it is never found and what header to write above it.

This module formats and parses; writing (append, fsync) is home.append_bytes's.
"""

import datetime as dt
import re
from dataclasses import dataclass

from proto.messages import SESSION_ID_PATTERN
from proto.records import utc_text
from proto.trim import trim

HEADER_TIME = "%Y-%m-%dT%H:%MZ"
_SESSION = SESSION_ID_PATTERN.strip("^$")
_TIME = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}Z"
_NOTED = re.compile(
    rf"^§ noted (?P<time>{_TIME}) in session (?P<session>{_SESSION})"
    r" · (?P<klass>public|private|secret)(?P<untrusted> · untrusted)?$"
)
_MOVED = re.compile(
    rf"^§ (?P<kind>moved|dropped) (?P<time>{_TIME}) from (?P<file>memory\.md|user\.md)"
    rf" in session (?P<session>{_SESSION})(?: · (?P<klass>public|private|secret))?$"
)


@dataclass(frozen=True)
class NoteEntry:
    """One entry of notes.md: how it got there, its label, its text and its byte span."""

    number: int
    kind: str  # noted, moved or dropped
    time: str  # as in the header: 2026-09-24T21:02Z
    session: str
    source: str | None  # memory.md or user.md for moved and dropped
    klass: str
    untrusted: bool
    text: str
    start: int
    end: int
    damaged: bool = False  # its header is not one memoryd writes: read as an untrusted note


def header_time(when: dt.datetime) -> str:
    """A header's time: UTC to the minute, the year in four digits (proto.records.utc_text)."""
    return utc_text(when, seconds=False)


def real_time(text: str) -> bool:
    """Whether a header's time text (2026-09-24T21:02Z) names a time there is."""
    try:
        dt.datetime.strptime(text, HEADER_TIME)
    except ValueError:
        return False
    return True


def _stuff(text: str) -> str:
    lines = text.split("\n")
    return "\n".join("\\" + line if line.startswith(("§", "\\")) else line for line in lines)


def _unstuff(line: str) -> str:
    return line[1:] if line.startswith("\\") else line


def noted(text: str, when: dt.datetime, session: str | None, klass: str, untrusted: bool) -> str:
    """The text to append for a noted entry."""
    head = header_line("noted", header_time(when), session, klass, untrusted)
    return f"{head}\n{_stuff(text)}\n"


def header_line(
    kind: str,
    time: str,
    session: str | None,
    klass: str,
    untrusted: bool = False,
    source: str = "memory.md",
) -> str:
    """A header line with its time as text (a header's own, kept as it stands), without newline:
    noted, or moved or dropped from source (whose class is written only when above private)."""
    if kind == "noted":
        tail = " · untrusted" if untrusted else ""
        return f"§ noted {time} in session {session} · {klass}{tail}"
    if kind not in ("moved", "dropped"):
        raise ValueError(f"not a kind of removal: {kind!r}")
    tail = f" · {klass}" if klass != "private" else ""
    return f"§ {kind} {time} from {source} in session {session}{tail}"


def moved_or_dropped(
    kind: str,
    text: str,
    when: dt.datetime,
    source: str,
    session: str | None,
    klass: str = "private",
) -> str:
    """The text to append for an entry moved or dropped from source (memory.md or user.md).

    klass is the class of the session that wrote the entry in; the spec's header, which has no
    class, stands for private, so only a higher class is written (" · secret").
    """
    head = header_line(kind, header_time(when), session, klass, source=source)
    return f"{head}\n{_stuff(text)}\n"


def _header(line: str) -> dict | None:
    m = _NOTED.match(line)
    if m and real_time(m["time"]):
        return {
            "kind": "noted",
            "time": m["time"],
            "session": m["session"],
            "source": None,
            "klass": m["klass"],
            "untrusted": m["untrusted"] is not None,
        }
    m = _MOVED.match(line)
    if m and real_time(m["time"]):
        return {
            "kind": m["kind"],
            "time": m["time"],
            "session": m["session"],
            "source": m["file"],
            "klass": m["klass"] or "private",
            "untrusted": False,
        }
    return None


# A year of one to four digits: a header an older memoryd wrote for a year before 1000 (999-...).
_LOOSE_TIME = re.compile(r"(?<![0-9])([0-9]{1,4})-([0-9]{2}-[0-9]{2})[T ]?([0-9]{2}:[0-9]{2})")
_LOOSE_SESSION = re.compile(rf"\bsession\s+({_SESSION})")


def _damaged(line: str, before: dict | None) -> dict:
    """A header memoryd did not write as it stands: an untrusted note, of the class it names if
    that is secret (else private, the spec's class for a header without one), at the time and
    session it still shows, or else the entry's before it (else the owner's, at the epoch). A
    time it shows that is no time there is (2026-02-30) is not kept: every reader takes a note's
    time as a real one."""
    when = _LOOSE_TIME.search(line)
    session = _LOOSE_SESSION.search(line)
    time = f"{int(when[1]):04d}-{when[2]}T{when[3]}Z" if when else None
    if time is None or not real_time(time):
        time = before["time"] if before else "1970-01-01T00:00Z"
    return {
        "kind": "noted",
        "time": time,
        "session": session[1] if session else "owner",
        "source": None,
        "klass": "secret" if re.search(r"\bsecret\b", line) else "private",
        "untrusted": True,
        "damaged": True,
    }


# A UTF-8 sequence of two to four bytes: a line holding one is UTF-8 with a damaged byte, read
# with replacement characters; a line holding none but bytes over 0x7F was saved in a one-byte
# encoding (an editor's Latin-1 or Windows-1252), where "§" is the one byte 0xA7.
_UTF8_SEQUENCE = re.compile(rb"[\xc2-\xf4][\x80-\xbf]")


def decode_line(raw: bytes) -> str:
    """A line of notes.md as text: UTF-8, else Windows-1252 when it holds no UTF-8 sequence at
    all (the whole file saved in a one-byte encoding: its headers and text read as written), else
    UTF-8 with a replacement character for each damaged byte."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        if _UTF8_SEQUENCE.search(raw) is None:
            return raw.decode("cp1252", errors="replace")
        return raw.decode("utf-8", errors="replace")


def not_utf8(data: bytes, lines_before: int = 0) -> str | None:
    """One line naming the first line of notes.md that is not UTF-8, or None when all are; data
    starts after lines_before lines of the file."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = lines_before + data.count(b"\n", 0, e.start) + 1
        return (
            f"memory/notes.md line {line} is not UTF-8 (saved in another encoding?): its lines "
            "are read as Windows-1252 where they hold no UTF-8; save the file as UTF-8"
        )
    return None


def parse(data: bytes, offset: int = 0, number: int = 0) -> list[NoteEntry]:
    """The entries of notes.md bytes that start at byte offset of the file, numbered from number.

    Text before the first header (an owner's hand edit) belongs to no entry and is skipped; a line
    that starts with "§" but is not a header starts a damaged entry (the module docstring).
    A line that is not UTF-8 is read as decode_line says, so a damaged byte costs one character
    and a file saved as Latin-1 keeps its notes. A byte-order mark at the file's start (Notepad
    saves one) is read as nothing, its bytes counted.
    """
    entries: list[NoteEntry] = []
    current: dict | None = None
    body: list[str] = []
    position = offset

    def close(end: int) -> None:
        nonlocal number
        if current is not None:
            text = trim("\n".join(_unstuff(line) for line in body))
            entries.append(NoteEntry(number=number, text=text, end=end, **current))
            number += 1

    for raw in data.splitlines(keepends=True):
        line = decode_line(raw).rstrip("\r\n")
        if position == 0 and line.startswith("\ufeff"):
            line = line[1:]  # a byte-order mark an editor saved the file with: no text of a note
        head = _header(line) if line.startswith("§ ") else None
        if head is None and line.startswith("§"):
            head = _damaged(line, current)
        if head is not None:
            close(position)
            current = {**head, "start": position}
            body = []
        elif current is not None:
            body.append(line)
        position += len(raw)
    close(position)
    return entries


def damage_said(entry: NoteEntry, data: bytes, offset: int = 0) -> str:
    """One line naming a damaged header: its line when data is notes.md from its start (offset 0),
    else its byte; what it says (cut) and how it is read until the owner mends it."""
    at = entry.start - offset
    end = data.find(b"\n", at)
    header = decode_line(data[at : end if end != -1 else len(data)]).rstrip("\r")
    line = data.count(b"\n", 0, at) + 1
    where = f"line {line}" if offset == 0 else f"byte {entry.start}"
    shown = header if len(header) <= 80 else header[:79] + "…"
    found = _NOTED.match(header) or _MOVED.match(header)
    because = f" (its time {found['time']} is no time there is)" if found else ""
    return (
        f"notes.md {where}: {shown!r} is not a header memoryd writes{because}; "
        f"note:{entry.number} is read as an untrusted note until the header is mended"
    )


def leading_said(data: bytes) -> str | None:
    """One line naming the text notes.md holds before its first header (data from the file's
    start), which belongs to no note and is never recalled; None when there is none."""
    raws = data.splitlines(keepends=True)
    lines = 0
    for raw in raws:
        if decode_line(raw).lstrip("\ufeff").startswith("§"):
            break
        lines += 1
    if not trim(decode_line(b"".join(raws[:lines])).lstrip("\ufeff")):
        return None
    where = "line 1" if lines == 1 else f"lines 1 to {lines}"
    return (
        f"notes.md {where}: text before the first header belongs to no note and is never "
        "recalled; to keep it, write a header line above it, such as "
        f"'§ moved {header_time(dt.datetime.now(dt.UTC))} from memory.md in session owner'"
    )
