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
from proto.messages import ToolCall, describe

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
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# Any RFC 3339 time is read; records carry it as UTC ("Z"), which recall and the index show.
Time = Annotated[str, StringConstraints(pattern=TIME_PATTERN), AfterValidator(utc_time)]


def now_rfc3339() -> str:
    """The current time as RFC 3339 UTC to the second: 2026-09-20T14:02:11Z."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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


def parse_record(line: bytes) -> UserRecord | AssistantRecord | ToolResultRecord:
    """One record from one line's bytes (without or with its newline)."""
    return _RECORD.validate_json(line)


def record_json(record: Record) -> str:
    """The line of a record, without its newline."""
    return json.dumps(
        record.model_dump(by_alias=True, mode="json"), ensure_ascii=False, separators=(",", ":")
    )


def read_records(path: str | os.PathLike, offset: int = 0, number: int = 0) -> Iterator[LogLine]:
    """Yield the complete records of a log from byte offset on, numbered from number.

    Raises RecordDamaged at the first complete line that is not a valid record.
    """
    with open_read(path) as f:
        f.seek(offset)
        position = offset
        for line in f:
            if not line.endswith(b"\n"):
                return
            start, position = position, position + len(line)
            try:
                record = parse_record(line)
            except ValidationError as e:
                raise RecordDamaged(
                    f"{os.fspath(path)}: record {number} at byte {start} is damaged: {describe(e)}",
                    line=number,
                    offset=start,
                ) from None
            yield LogLine(number, start, position, record)
            number += 1


def append_record(path: str | os.PathLike, record: Record) -> None:
    """Append one record as one line, then fsync, so it is whole on disk before we go on."""
    append_bytes(path, (record_json(record) + "\n").encode("utf-8"))
