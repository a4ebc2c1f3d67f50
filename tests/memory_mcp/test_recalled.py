"""Reading memoryd's recall log for a client's tainted recalls (recalled.py), on real files: the
newest one found across months and pieces, only the calling session counted, another client's
name that begins with this one's left alone, damaged and overlong lines failing closed, a month
that is not a regular file refused, and a log not there showing nothing."""

import json
import os

import pytest

from memory_mcp import recalled
from memory_mcp.recalled import Given, RecallLogUnreadable, newest_tainted


def _line(session: str, tag: str = "memory", hit_session: str = "mm-web00001", at: str = "") -> str:
    hit = {"kind": "noted", "session": hit_session, "record": 1, "tag": tag}
    entry = {"time": at or "2026-12-05T07:45:47Z", "session": session, "query": "q", "k": 5}
    entry["hits"] = [hit]
    return json.dumps(entry, separators=(",", ":"))


def _month(home, name: str, lines: list[str], end: str = "\n") -> None:
    folder = home / "memory" / "recalls"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("\n".join(lines) + end)


DESK = "mcp-desk-20261205T074547-219Z"


def test_no_log_shows_nothing(tmp_path):
    assert newest_tainted(tmp_path, "desk") is None
    _month(tmp_path, "2026-12.jsonl", [_line(DESK)])
    assert newest_tainted(tmp_path, "desk") is None


def test_the_newest_tainted_recall_is_found_across_months_and_pieces(tmp_path, monkeypatch):
    monkeypatch.setattr(recalled, "PIECE", 64)  # every line crosses a piece
    older = _line(DESK, "memory-tainted", at="2026-11-30T06:00:00Z")
    newer = _line("mcp-desk-20261201T060000-000Z", "memory-tainted", at="2026-12-01T06:00:00Z")
    _month(tmp_path, "2026-11.jsonl", [older, _line(DESK)])
    _month(tmp_path, "2026-12.jsonl", [_line(DESK), newer] + [_line("mm-web00002")] * 50)
    assert newest_tainted(tmp_path, "desk") == Given(
        "mcp-desk-20261201T060000-000Z", "2026-12-01T06:00:00Z"
    )
    (tmp_path / "memory" / "recalls" / "2026-12.jsonl").unlink()
    assert newest_tainted(tmp_path, "desk") == Given(DESK, "2026-11-30T06:00:00Z")


def test_only_the_calling_session_of_this_client_counts(tmp_path):
    _month(
        tmp_path,
        "2026-12.jsonl",
        [
            # a tainted recall by another session, of a note this client's session wrote
            _line("mm-web00002", "memory-tainted", hit_session=DESK),
            # a tainted recall by a client whose name begins with this one's
            _line("mcp-desk-top-20261205T074547-219Z", "memory-tainted"),
        ],
    )
    assert newest_tainted(tmp_path, "desk") is None
    assert newest_tainted(tmp_path, "desk-top") is not None


@pytest.mark.parametrize("end", ["\n", ""])
def test_a_damaged_line_of_the_client_that_names_a_taint_fails_closed(tmp_path, end):
    torn = _line(DESK, "memory-tainted")[:-3]  # a crash cut it
    _month(tmp_path, "2026-12.jsonl", [_line(DESK), torn], end=end)
    assert newest_tainted(tmp_path, "desk") == Given("(a damaged line)", recalled.UNKNOWN_TIME)


def test_an_overlong_line_holding_the_client_fails_closed_and_bounds_memory(tmp_path, monkeypatch):
    monkeypatch.setattr(recalled, "PIECE", 256)
    monkeypatch.setattr(recalled, "MOST_LINE", 256)
    long = '{"time":"x","session":"' + DESK + '","query":"' + "q" * 5000 + '"}'
    _month(tmp_path, "2026-12.jsonl", [_line("mm-web00002"), long, _line("mm-web00003")])
    found = newest_tainted(tmp_path, "desk")
    assert found is not None and found.session.startswith("(a line too long")
    assert newest_tainted(tmp_path, "other") is None


@pytest.mark.parametrize("kind", ["fifo", "link", "folder"])
def test_a_month_that_is_not_a_regular_file_is_refused(tmp_path, kind):
    _month(tmp_path, "2026-12.jsonl", [_line(DESK)])
    path = tmp_path / "memory" / "recalls" / "2026-11.jsonl"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link":
        path.symlink_to(tmp_path / "memory" / "recalls" / "2026-12.jsonl")
    else:
        path.mkdir()
    with pytest.raises(RecallLogUnreadable, match="2026-11.jsonl"):
        newest_tainted(tmp_path, "desk")
