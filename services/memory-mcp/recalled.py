"""memoryd's recall log, read for what a client's sessions were given.

memoryd writes one line per recall to {home}/memory/recalls/YYYY-MM.jsonl before it answers, time
first, then the calling session, then each hit with its tag (memoryd's journal/recallline.py),
and memory-mcp's session ids carry the client's name (mcp-<client>-<start time>, session.py). So
the log tells, independently of the client's kept state (raised.py), whether one of the client's
sessions was answered with a memory-tainted hit: the text that makes a session untrusted. It is
read only when that kept state is gone (startstate.py), and so is the edit journal, through the
same month_lines (journalled.py), for when the owner removed the log's months.

Cost: the months are read newest first and each from its end, in pieces of PIECE bytes; a piece
that does not hold the client's session id is passed over with one search, and the read stops at
the first line that shows a tainted hit. A log that shows none is read whole (its outcome is
then kept, so that happens once per client, not at every connection).

What the log cannot tell: a hit's class (a secret answer is not recovered from it), a line
memoryd could not write (it skips lines while its disk is full). A line the client's session id
is in that does not parse (torn by a crash, edited by hand) and holds the word memory-tainted
counts as tainted: failing closed. A log that cannot be read at all is RecallLogUnreadable, for
the caller to fail closed on; one that is not there (a home that has had no recall) shows nothing.
No link is followed and only regular files are read: the folder and each month are opened with
O_NOFOLLOW, a month with O_NONBLOCK, so a FIFO there is refused, never waited on.
"""

import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memory_mcp.errors import MemoryMcpError
from memory_mcp.session import PREFIX

MONTH = re.compile(r"[0-9]{4}-[0-9]{2}\.jsonl")
START_TIME = r"[0-9]{8}T[0-9]{6}-[0-9]{3}Z"  # session.start_time's
LINE_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{8,15}Z")
PIECE = 1 << 20
MOST_LINE = 1 << 20  # longer than any line memoryd writes (a query is at most 8,192 characters)
TAINTED = b"memory-tainted"
UNKNOWN_TIME = "(time not recorded)"
LONG_LINE = b"\n"  # in place of a line past MOST_LINE (no line given holds a newline)


class RecallLogUnreadable(MemoryMcpError):
    """The recall log cannot be read: whether the client was given untrusted text is unknown."""


@dataclass(frozen=True)
class Given:
    """The newest recall of one of the client's sessions that was answered with a tainted hit."""

    session: str
    time: str


def folder(home: Path) -> Path:
    return home / "memory" / "recalls"


def newest_tainted(home: Path, client: str) -> Given | None:
    """The client's newest session given a memory-tainted hit, per the recall log; None when the
    log shows none. client is session.client_key's (the SessionId alphabet), so it goes into a
    pattern as it is."""
    ours = re.compile(re.escape(PREFIX + client) + "-" + START_TIME)
    needle = f'"session":"{PREFIX}{client}-'.encode()
    for line in month_lines(folder(home), needle, RecallLogUnreadable):
        found = _tainted(line, ours)
        if found is not None:
            return found
    return None


def has_month(home: Path) -> bool:
    """Whether the recall log holds a month file at all (False: none, or no folder)."""
    where = folder(home)
    fd = _open_folder(where, RecallLogUnreadable)
    if fd is None:
        return False
    try:
        return any(MONTH.fullmatch(n) for n in os.listdir(fd))
    except OSError as e:
        raise RecallLogUnreadable(f"{where}: {e.strerror or e}") from None
    finally:
        os.close(fd)


def month_lines(where: Path, needle: bytes, error: type[MemoryMcpError]) -> Iterator[bytes]:
    """The lines of the month files (YYYY-MM.jsonl) in where that hold needle, newest first; a
    folder or month that cannot be read raises error, a folder that is not there holds none."""
    fd = _open_folder(where, error)
    if fd is None:
        return
    try:
        try:
            months = sorted((n for n in os.listdir(fd) if MONTH.fullmatch(n)), reverse=True)
        except OSError as e:
            raise error(f"{where}: {e.strerror or e}") from None
        for name in months:
            yield from _month(fd, where / name, name, needle, error)
    finally:
        os.close(fd)


def _open_folder(where: Path, error: type[MemoryMcpError]) -> int | None:
    try:
        return os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise error(f"{where}: {e.strerror or e}") from None


def _month(
    folder_fd: int, path: Path, name: str, needle: bytes, error: type[MemoryMcpError]
) -> Iterator[bytes]:
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder_fd
        )
    except FileNotFoundError:
        return  # replaced or removed since the listing
    except OSError as e:
        raise error(f"{path}: {e.strerror or e}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise error(f"{path}: not a regular file")
        yield from _lines_backwards(fd, needle)
    except OSError as e:
        raise error(f"{path}: {e.strerror or e}") from None
    finally:
        os.close(fd)


def _lines_backwards(fd: int, needle: bytes) -> Iterator[bytes]:
    """The lines of the file that hold needle, newest first. A line longer than MOST_LINE (none
    memoryd writes) is not kept whole while it is read: when needle is in it, LONG_LINE is given
    in its place."""
    end = os.fstat(fd).st_size
    keep = len(needle) - 1  # a needle across a piece's start is still found
    carry = b""  # the end of a line that begins before the piece read next
    long = held = False  # that line is past MOST_LINE (carry keeps its first bytes); needle seen
    while end > 0:
        start = max(0, end - PIECE)
        data = os.pread(fd, end - start, start)
        if len(data) < end - start:  # cut back since the fstat (a torn append): the rest is gone
            carry, long, held = b"", False, False
        data += carry
        end = start
        cut = data.find(b"\n") if start > 0 else -1
        if start > 0 and cut < 0:
            carry = data  # no line begins in this piece
        else:
            carry, body = (data[:cut], data[cut + 1 :]) if cut >= 0 else (b"", data)
            yield from _within(body, needle, long, held)
            long = held = False
        if len(carry) > MOST_LINE:
            held = held or needle in carry
            carry, long = carry[:keep], True


def _within(body: bytes, needle: bytes, long: bool, held: bool) -> Iterator[bytes]:
    """The lines of body that hold needle, newest first; its last line is the long one if long."""
    if not held and needle not in body:
        return
    lines = body.split(b"\n")
    last = lines.pop()
    if long:
        if held or needle in last:
            yield LONG_LINE
    elif needle in last:
        yield last
    for line in reversed(lines):
        if needle in line:
            yield line


def _tainted(line: bytes, ours: re.Pattern) -> Given | None:
    if line == LONG_LINE:
        return Given("(a line too long to be memoryd's)", UNKNOWN_TIME)
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        record = None
    if not isinstance(record, dict):
        # not a line as memoryd writes it: tainted if it could be one of the client's sessions'
        return Given("(a damaged line)", UNKNOWN_TIME) if TAINTED in line else None
    session, hits = record.get("session"), record.get("hits")
    if not isinstance(session, str) or not ours.fullmatch(session):
        return None  # the client's id was only a hit's: a note the client's session wrote
    if not isinstance(hits, list):
        return Given(session, _time(record)) if TAINTED in line else None
    if any(isinstance(h, dict) and h.get("tag") == "memory-tainted" for h in hits):
        return Given(session, _time(record))
    return None


def _time(record: dict) -> str:
    when = record.get("time")
    return when if isinstance(when, str) and LINE_TIME.fullmatch(when) else UNKNOWN_TIME
