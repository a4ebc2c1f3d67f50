"""The rows of a session log's records (spec 6), read a part at a time.

What is indexed: the content of user records, of assistant records that have content, and each
tool call as "name arguments"; never tool results, never reasoning. Each record carries the
session's label in force when it was written: the highest class of the tool results before it (at
least private), untrusted if any of them was. A record above max_class is not indexed. A row holds
at most max_record_bytes of its text, and a line longer than LINE_CAP is read in chunks (the cut is
logged, naming the log and the record).
"""

import hashlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from memoryd.index.settings import Settings, cap_text
from proto.errors import RecordDamaged
from proto.labels import CLASS_RANK, higher_class
from proto.records import AssistantRecord, ToolResultRecord, UserRecord, read_records

log = logging.getLogger("memoryd.index.indexer")


@dataclass
class LogState:
    """How far one log has been read, and the session's label at that point (the indexer keeps
    it per log in its offsets table)."""

    records: int = 0
    bytes: int = 0
    klass: str = "private"
    untrusted: bool = False
    tail: str = hashlib.sha256(b"").hexdigest()
    # The file read, as indexer.file_of gives it (device and inode; for notes.md its size and
    # times too), or None when not known (an index written before it was kept).
    file: str | None = None
    # notes.md only: the digest of the bytes read before the offset (notesprefix.py), or None.
    prefix: str | None = None


# A session log line longer than this is read in chunks, never whole.
LINE_CAP = 1 << 20

Row = tuple  # (kind, session, epoch, record, time, role, class, untrusted, text)


@dataclass
class Part:
    """How much of a log one part may read, and whether the log was read to its end."""

    records: int | None = None
    bytes: int | None = None
    seconds: float | None = None  # of reading (the rows' insert comes after)
    done: bool = False
    damaged: str | None = None  # where and why the read stopped at a damaged record


def _record_texts(record: UserRecord | AssistantRecord) -> Iterable[tuple[str, str]]:
    """(role, text) of each row a user or assistant record gives."""
    if isinstance(record, UserRecord):
        if record.content:
            yield "user", record.content
        return
    if record.content:
        yield "assistant", record.content
    for call in record.tool_calls:
        yield "call", f"{call.name} {call.arguments}"


def session_rows(
    path: Path,
    session: str,
    state: LogState,
    settings: Settings,
    counted: Callable[[int], None],
    part: Part,
) -> Iterable[Row]:
    """The rows of a session log's records past state, advancing state as records are read.

    Stops at the first damaged record with a log line naming the log: the records before it are
    indexed, and state stays before it, so each catch-up tries again from there. A log that
    cannot be read raises its OSError. Stops after
    part's records or bytes, with part.done false; at the log's end part.done is true.
    """
    limit = CLASS_RANK[settings.max_class]
    number = state.records
    first_byte = state.bytes
    started = time.monotonic()
    read = 0
    try:
        lines = read_records(
            path, state.bytes, state.records, max_line=LINE_CAP, keep=settings.max_record_bytes
        )
        for line in lines:
            record = line.record
            if isinstance(record, ToolResultRecord):
                state.klass = higher_class(state.klass, record.klass)
                state.untrusted = state.untrusted or record.untrusted
            elif CLASS_RANK[state.klass] <= limit:
                label = (state.klass, int(state.untrusted))
                cut = line.cut
                for role, text in _record_texts(record):
                    capped = cap_text(text, settings.max_record_bytes)
                    cut = cut or capped is not None
                    row_text = text if capped is None else capped
                    yield ("session", session, 0, line.number, record.time, role, *label, row_text)
                if cut:
                    log.info(
                        "session log %s: record %d (%d bytes): indexed its first %d bytes",
                        path,
                        line.number,
                        line.end - line.start,
                        settings.max_record_bytes,
                    )
            state.records = line.number + 1
            state.bytes = line.end
            number = state.records
            counted(1)
            read += 1
            if (
                (part.records is not None and read >= part.records)
                or (part.bytes is not None and state.bytes - first_byte >= part.bytes)
                or (
                    part.seconds is not None
                    and read % 64 == 0
                    and time.monotonic() - started >= part.seconds
                )
            ):
                return
        part.done = True
    except (RecordDamaged, UnicodeError) as damage:
        part.done = True
        part.damaged = f"damaged at record {number}: {damage}"
        log.warning("session log %s: skipped from record %d: %s", path, number, damage)
    # An OSError (a log memoryd may not read, an I/O error) is no damage of the log: it goes to
    # the caller, whose transaction keeps nothing of the part, and the catch-up tries it again.
