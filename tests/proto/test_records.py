"""Session log records: the reader yields complete lines with offsets; damage is named."""

import datetime as dt
import json
import re

import pytest

from proto.errors import RecordDamaged
from proto.records import (
    TIME_PATTERN,
    AssistantRecord,
    ToolResultRecord,
    UserRecord,
    append_session_record,
    read_records,
    utc_text,
)

T = "2026-09-20T14:02:11Z"


def sample_records():
    return [
        UserRecord(time=T, content="When is the launch?"),
        AssistantRecord(
            time=T,
            content=None,
            tool_calls=[{"id": "c1", "name": "http_fetch", "arguments": '{"url":"x"}'}],
        ),
        ToolResultRecord.model_validate(
            {
                "type": "tool_result",
                "time": T,
                "call_id": "c1",
                "name": "http_fetch",
                "output": "page",
                "class": "private",
                "untrusted": True,
            }
        ),
        AssistantRecord(time=T, content="Thursday.", reasoning_content="hm"),
    ]


def test_write_then_read_with_offsets(tmp_path):
    log = tmp_path / "0.jsonl"
    for r in sample_records():
        append_session_record(log, r)
    lines = list(read_records(log))
    assert [x.number for x in lines] == [0, 1, 2, 3]
    assert [x.record for x in lines] == sample_records()
    data = log.read_bytes()
    for x in lines:
        assert data[x.end - 1 : x.end] == b"\n"
        assert json.loads(data[x.start : x.end]) == x.record.model_dump(by_alias=True)
    assert lines[-1].end == len(data)
    assert oct(log.stat().st_mode & 0o777) == "0o600"


def test_read_from_offset_continues_numbering(tmp_path):
    log = tmp_path / "0.jsonl"
    for r in sample_records():
        append_session_record(log, r)
    first = list(read_records(log))
    rest = list(read_records(log, offset=first[1].end, number=2))
    assert rest == first[2:]


def test_partial_last_line_is_not_a_record_nor_damage(tmp_path):
    log = tmp_path / "0.jsonl"
    append_session_record(log, sample_records()[0])
    with open(log, "ab") as f:
        f.write(b'{"type":"user","time":"2026-09-20T14:02:11Z","cont')
    assert len(list(read_records(log))) == 1


@pytest.mark.parametrize(
    "line",
    [
        b"not json\n",
        b'{"type":"user","time":"2026-09-20T14:02:11Z"}\n',
        b'{"type":"robot","time":"2026-09-20T14:02:11Z","content":"x"}\n',
        b'{"type":"user","time":"yesterday","content":"x"}\n',
        b'{"type":"user","time":"2026-09-20T14:02:11Z","content":"x","extra":1}\n',
        b'{"type":"tool_result","time":"2026-09-20T14:02:11Z","call_id":"c","name":"n",'
        b'"output":"o","class":"top","untrusted":false}\n',
        b"\xff\xfe\n",
    ],
)
def test_damaged_line_named(tmp_path, line):
    log = tmp_path / "0.jsonl"
    append_session_record(log, sample_records()[0])
    size = log.stat().st_size
    with open(log, "ab") as f:
        f.write(line)
    with pytest.raises(RecordDamaged) as e:
        list(read_records(log))
    assert e.value.line == 1
    assert e.value.offset == size
    assert "record 1" in str(e.value)


@pytest.mark.parametrize(
    "written,read",
    [
        ("2026-09-20T14:02:11Z", "2026-09-20T14:02:11Z"),
        ("2026-09-20T14:02:11.250Z", "2026-09-20T14:02:11.250Z"),
        ("2026-09-20T16:02:11+02:00", "2026-09-20T14:02:11Z"),
        ("2026-09-20t14:02:11z", "2026-09-20T14:02:11Z"),
        ("2026-09-20T00:30:00-01:00", "2026-09-20T01:30:00Z"),
        # Years before 1000 keep their four digits once in UTC, as the pattern reads them back.
        ("0999-01-01T10:00:00+00:00", "0999-01-01T10:00:00Z"),
        ("0001-01-01T01:30:00+01:00", "0001-01-01T00:30:00Z"),
        ("0099-12-31T23:00:00-02:00", "0100-01-01T01:00:00Z"),
    ],
)
def test_any_rfc3339_time_is_read_as_utc(tmp_path, written, read):
    log = tmp_path / "0.jsonl"
    log.write_text(json.dumps({"type": "user", "time": written, "content": "x"}) + "\n")
    assert [x.record.time for x in read_records(log)] == [read]
    assert re.match(TIME_PATTERN, read)


@pytest.mark.parametrize(
    "time",
    [
        "2026-09-20 14:02:11Z",
        "2026-09-20T14:02Z",
        "2026-13-40T99:99:99Z",
        "9999-12-31T23:30:00-01:00",  # past the last date once in UTC
        "0001-01-01T00:30:00+01:00",  # before the first
    ],
)
def test_times_that_are_not_rfc3339_are_damage(tmp_path, time):
    log = tmp_path / "0.jsonl"
    log.write_text(json.dumps({"type": "user", "time": time, "content": "x"}) + "\n")
    with pytest.raises(RecordDamaged):
        list(read_records(log))


@pytest.mark.parametrize("year", [1, 9, 99, 999, 1000, 2026, 9999])
def test_every_time_written_has_a_four_digit_year_its_readers_take_back(year):
    when = dt.datetime(year, 3, 4, 5, 6, 7, tzinfo=dt.UTC)
    assert utc_text(when) == f"{year:04d}-03-04T05:06:07Z"
    assert utc_text(when, seconds=False) == f"{year:04d}-03-04T05:06Z"
    assert re.match(TIME_PATTERN, utc_text(when))
