"""Session log records (design section 3): one JSON record a line in sessions/{id}/0.jsonl.

loopd writes them, appending one whole line at a time; memoryd reads them. A last line without its
newline is still being written: read_records stops before it, and it is neither a record nor damage.
A complete line that is not a valid record is damage: RecordDamaged names the line and its offset.
"""

import datetime as dt
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
)

from proto.errors import RecordDamaged
from proto.files import append_bytes, open_read
from proto.labels import DataClass
from proto.longlines import LineShrinker
from proto.messages import ToolCall, describe

# A line longer than the reader's max_line keeps this much of each string (memoryd passes its own).
KEEP_BYTES = 65_536
# Past max_line, what lies outside a line's strings may hold at most this much.
LONG_LINE_STRUCTURE = 1 << 20
CHUNK = 1 << 20

TIME_PATTERN = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)


def utc_time(text: str) -> str:
    """An RFC 3339 time as UTC: 2026-09-20T16:02:11+02:00 becomes 2026-09-20T14:02:11Z (a time
    already in UTC with Z is kept as written)."""
    try:
        when = dt.datetime.fromisoformat(text.upper())
    except ValueError:
        raise ValueError("not an RFC 3339 time") from None
    if text.endswith("Z") and text[10] == "T":
        return text
    try:
        return utc_text(when)
    except OverflowError:  # 9999-12-31T23:30:00-01:00 is past the last date there is
        raise ValueError("not a time in UTC's range (years 1 to 9999)") from None


def utc_text(when: dt.datetime, seconds: bool = True) -> str:
    """when in UTC as memoryd writes every time: 2026-09-20T14:02:11Z (2026-09-20T14:02Z without
    seconds). The year always has four digits (0999, 0001): strftime's %Y writes 999 and 1 on
    glibc, which no reader of these times (all want four digits) takes back."""
    u = when.astimezone(dt.UTC)
    text = f"{u.year:04d}-{u.month:02d}-{u.day:02d}T{u.hour:02d}:{u.minute:02d}"
    return f"{text}:{u.second:02d}Z" if seconds else f"{text}Z"


# Any RFC 3339 time is read; records carry it as UTC ("Z"), which recall and the index show.
Time = Annotated[str, StringConstraints(pattern=TIME_PATTERN), AfterValidator(utc_time)]


def now_rfc3339() -> str:
    """The current time as RFC 3339 UTC to the second: 2026-09-20T14:02:11Z."""
    return utc_text(dt.datetime.now(dt.UTC))


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


class UserRecord(Record):
    type: Literal["user"] = "user"
    time: Time
    content: str


class AssistantRecord(Record):
    type: Literal["assistant"] = "assistant"
    time: Time
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] = []


class ToolResultRecord(Record):
    type: Literal["tool_result"] = "tool_result"
    time: Time
    call_id: str
    name: str
    output: str
    klass: DataClass = Field(alias="class")
    untrusted: bool


AnyRecord = Annotated[UserRecord | AssistantRecord | ToolResultRecord, Field(discriminator="type")]
_RECORD = TypeAdapter(AnyRecord)


@dataclass(frozen=True)
class LogLine:
    """A complete record and where it stands: its number (from 0) and its byte span."""

    number: int
    start: int
    end: int
    record: UserRecord | AssistantRecord | ToolResultRecord
    cut: bool = False  # longer than the reader's max_line: its strings were cut


def parse_record(line: bytes) -> UserRecord | AssistantRecord | ToolResultRecord:
    """One record from one line's bytes (without or with its newline)."""
    return _RECORD.validate_json(line)


def record_json(record: Record) -> str:
    """The line of a record, without its newline."""
    return json.dumps(
        record.model_dump(by_alias=True, mode="json"), ensure_ascii=False, separators=(",", ":")
    )


def read_records(
    path: str | os.PathLike,
    offset: int = 0,
    number: int = 0,
    *,
    max_line: int | None = None,
    keep: int = KEEP_BYTES,
) -> Iterator[LogLine]:
    """Yield the complete records of a log from byte offset on, numbered from number.

    With max_line, a line longer than max_line bytes is never held whole: it is read in chunks
    and each of its strings keeps its first keep bytes (proto.longlines); its LogLine says cut.
    Raises RecordDamaged at the first complete line that is not a valid record.
    """
    limit = -1 if max_line is None else max_line + 1
    with open_read(path) as f:
        f.seek(offset)
        position = offset
        while True:
            line = f.readline(limit)
            if not line.endswith(b"\n"):
                if not line or max_line is None or len(line) <= max_line:
                    return  # the end, or a last line still being written
                shrunk = _read_long_line(f, line, keep)
                if shrunk is None:
                    return
                data, length = shrunk
                cut = True
                if data is None:
                    raise RecordDamaged(
                        f"{os.fspath(path)}: record {number} at byte {position} is damaged: over"
                        f" {LONG_LINE_STRUCTURE} bytes outside its strings",
                        line=number,
                        offset=position,
                    )
            else:
                data, length, cut = line, len(line), False
            start, position = position, position + length
            yield LogLine(number, start, position, _parse_at(path, data, number, start), cut)
            number += 1


def _parse_at(
    path: str | os.PathLike, data: bytes, number: int, start: int
) -> "UserRecord | AssistantRecord | ToolResultRecord":
    try:
        return parse_record(data)
    except ValidationError as e:
        raise RecordDamaged(
            f"{os.fspath(path)}: record {number} at byte {start} is damaged: {describe(e)}",
            line=number,
            offset=start,
        ) from None


def _read_long_line(f, head: bytes, keep: int) -> tuple[bytes | None, int] | None:
    """The rest of a line longer than the reader's max_line, read in chunks and kept small:
    (the line as kept, or None when its structure is too large; its length on disk with the
    newline), or None when it has no newline yet. Leaves f just past the line's newline."""
    shrinker = LineShrinker(keep, limit=LONG_LINE_STRUCTURE)
    shrinker.feed(head)
    length = len(head)
    while True:
        chunk = f.read(CHUNK)
        if not chunk:
            return None
        newline = chunk.find(b"\n")
        if newline >= 0:
            shrinker.feed(chunk[:newline])
            length += newline + 1
            f.seek(f.tell() - len(chunk) + newline + 1)
            break
        shrinker.feed(chunk)
        length += len(chunk)
    return (None if shrinker.too_large else shrinker.result()), length


def append_session_record(path: str | os.PathLike, record: Record) -> None:
    """Append one session-log record as one line, then fsync, so it is whole on disk before we go
    on. (memoryd's journal has its own append_record for its edit lines.)"""
    append_bytes(path, (record_json(record) + "\n").encode("utf-8"))
