"""A journal month holding a run far longer than any line memoryd writes, without a newline (NUL
bytes a power cut left, a file copied over a month): read a block of whole lines at a time, the
run is not held whole; its first bytes stand for it, so the line still reads as one damaged line
and the offsets read stay the file's."""

import json
from pathlib import Path

import pytest

from memoryd.journal import wholelines
from memoryd.journal.wholelines import WholeLines

LINE = json.dumps({"id": "2026-12-05-0001", "to": "memory.md"}).encode() + b"\n"


@pytest.fixture
def bound(monkeypatch) -> int:
    monkeypatch.setattr(wholelines, "LONG_LINE", 10_000, raising=False)
    monkeypatch.setattr(wholelines, "HEAD", 100, raising=False)
    return 10_000


def read(path: Path, chunk: int = 1_000) -> tuple[list[bytes], WholeLines, int]:
    with open(path, "rb") as f:
        lines = WholeLines(f, path.stat().st_size, chunk)
        out, most = [], 0
        for data, cut in lines:
            most = max(most, len(data))
            out += data[:cut].split(b"\n")[:-1]
    return out, lines, most


def test_a_long_run_at_the_end_is_not_held_whole(tmp_path: Path, bound: int) -> None:
    month = tmp_path / "2026-12.jsonl"
    month.write_bytes(LINE + b"\0" * 50 * bound)
    out, lines, most = read(month)
    assert out == [LINE[:-1]] and lines.done == len(LINE)
    assert lines.rest == b"\0" * 100  # its head: enough to say it is damaged
    assert most <= bound + 1_000


def test_a_long_line_reads_as_its_head_and_the_lines_after_it_as_they_are(
    tmp_path: Path, bound: int
) -> None:
    month = tmp_path / "2026-12.jsonl"
    long = b'{"id": "2026-12-05-0002", "x": "' + b"y" * 30 * bound + b'"}\n'
    month.write_bytes(LINE + long + LINE + b'{"id": "2026-12-05-0004"')
    out, lines, most = read(month)
    assert out == [LINE[:-1], long[:100], LINE[:-1]]
    assert lines.done == 2 * len(LINE) + len(long)  # the file's offset, not what was kept
    assert lines.rest == b'{"id": "2026-12-05-0004"'
    assert most <= bound + 2_000


def test_a_line_under_the_bound_is_read_whole(tmp_path: Path, bound: int) -> None:
    month = tmp_path / "2026-12.jsonl"
    line = b'{"id": "2026-12-05-0002", "x": "' + b"y" * (bound - 100) + b'"}\n'
    month.write_bytes(LINE + line + LINE)
    out, lines, _ = read(month)
    assert out == [LINE[:-1], line[:-1], LINE[:-1]] and lines.done == month.stat().st_size
