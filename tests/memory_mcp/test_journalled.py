"""Reading memoryd's edit journal for a client's untrusted writes (journalled.py), on real files:
the newest found across months and pieces, another client's name that begins with this one's and
an entry's text naming the client left alone, a damaged line saying untrusted failing closed, the
newest session named when that is enough, the untrusted registration's own calls passed over, a
month that is not a regular file refused, and recalled.has_month telling a recall log with no
month from one with."""

import json
import os

import pytest

from memory_mcp import recalled
from memory_mcp.journalled import JournalUnreadable, Written, newest_untrusted
from memory_mcp.recalled import UNKNOWN_TIME, Given

DESK = "mcp-desk-20261205T074547-219Z"
LATER = "mcp-desk-20261206T060000-000Z"


def _line(
    session: str, untrusted=False, at="2026-12-05T07:45:47Z", text="x", call="mcp-call-1"
) -> str:
    edit = {"id": "2026-12-05-0001", "time": at, "session": session, "call": call}
    edit |= {"action": "add", "file": "user", "after": text}
    if untrusted:
        edit["untrusted"] = True
    return json.dumps(edit, ensure_ascii=False)


def _month(home, name: str, lines: list[str]) -> None:
    folder = home / "memory" / "edits"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(line + "\n" for line in lines))


def test_no_journal_shows_nothing(tmp_path):
    assert newest_untrusted(tmp_path, "desk", named_enough=False) == Written(None, None)


def test_the_newest_untrusted_write_is_found_across_months_and_pieces(tmp_path, monkeypatch):
    monkeypatch.setattr(recalled, "PIECE", 64)  # every line crosses a piece
    _month(tmp_path, "2026-11.jsonl", [_line(DESK, True, "2026-11-30T06:00:00Z")])
    _month(
        tmp_path,
        "2026-12.jsonl",
        [
            _line(LATER, True, "2026-12-06T06:00:00Z"),
            _line(LATER),
            _line("mcp-desk-top-20261206T070000-000Z", True),  # another client
            _line("mm-web00001", True, text=f"said by {DESK}"),  # the id only in the text
        ],
    )
    found = newest_untrusted(tmp_path, "desk", named_enough=False)
    assert found == Written(Given(LATER, "2026-12-06T06:00:00Z"), LATER)
    # named_enough stops at the client's newest line, a trusted one here
    assert newest_untrusted(tmp_path, "desk", named_enough=True) == Written(None, LATER)
    assert newest_untrusted(tmp_path, "other", named_enough=False) == Written(None, None)


def test_the_untrusted_registrations_lines_are_passed_over(tmp_path):
    own = _line(LATER, True, call="mcp-untrusted-call-3")
    _month(tmp_path, "2026-12.jsonl", [_line(DESK, True, call="1"), own])  # an older memory-mcp's
    assert newest_untrusted(tmp_path, "desk", named_enough=True) == Written(
        Given(DESK, "2026-12-05T07:45:47Z"), DESK
    )
    _month(tmp_path, "2026-12.jsonl", [own])
    assert newest_untrusted(tmp_path, "desk", named_enough=True) == Written(None, None)


def test_a_damaged_line_naming_the_client_and_untrusted_fails_closed(tmp_path):
    _month(tmp_path, "2026-12.jsonl", [_line(DESK), _line(LATER, True)[5:]])
    found = newest_untrusted(tmp_path, "desk", named_enough=False)
    assert found.untrusted == Given("(a damaged line)", UNKNOWN_TIME)


def test_a_month_that_is_not_a_regular_file_is_refused(tmp_path):
    _month(tmp_path, "2026-11.jsonl", [_line(DESK)])
    os.mkfifo(tmp_path / "memory" / "edits" / "2026-12.jsonl", 0o600)
    with pytest.raises(JournalUnreadable, match="2026-12.jsonl: not a regular file"):
        newest_untrusted(tmp_path, "desk", named_enough=False)


def test_has_month(tmp_path):
    assert recalled.has_month(tmp_path) is False
    (tmp_path / "memory" / "recalls").mkdir(parents=True)
    (tmp_path / "memory" / "recalls" / "notes.txt").write_text("")
    assert recalled.has_month(tmp_path) is False
    (tmp_path / "memory" / "recalls" / "2026-12.jsonl").write_text("")
    assert recalled.has_month(tmp_path) is True
