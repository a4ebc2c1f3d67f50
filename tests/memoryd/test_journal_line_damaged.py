"""A journal line damaged in place (a quote lost to a bad disk or an editor): memoryd still holds
it, so log says it passed over a damaged line (and which edit, when the line's start says), and
show and undo of its id name the file and line, never that the line has left edits/."""

import json

import pytest

from memoryd.errors import AdminRefused
from tests.memoryd.owner_data_harness import Memoryd

DAY = "2026-09-24"


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    m.call({"action": "add", "file": "user", "text": "User zero."})
    m.call({"action": "add", "file": "memory", "text": "Mem two."})
    m.call({"action": "add", "file": "memory", "text": "Mem three."})
    yield m
    m.close()


def _damage(md: Memoryd, line: int, how) -> None:
    (month,) = md.home.edits.glob("*.jsonl")
    lines = month.read_bytes().split(b"\n")
    lines[line] = how(lines[line])
    month.write_bytes(b"\n".join(lines))


def _quote_lost(raw: bytes) -> bytes:
    return raw.replace(b'"time": "', b'"time": ', 1)


def _wrong_shape(raw: bytes) -> bytes:
    value = json.loads(raw)
    value["action"] = ["not", "an", "action"]
    return json.dumps(value).encode()


@pytest.mark.parametrize("how", [_quote_lost, _wrong_shape])
def test_a_damaged_line_is_named_by_log_show_and_undo(md, how):
    edit = f"{DAY}-0002"
    _damage(md, 1, how)
    (month,) = md.home.edits.glob("*.jsonl")
    listed = md.admin("log")
    assert f"{DAY}-0001" in listed and f"{DAY}-0003" in listed
    assert listed.splitlines()[-1] == (
        f"(1 damaged journal line (edit {edit}) not listed, in {month}: it does not parse; "
        "memoryd's log says what is wrong)"
    )
    said = (
        f"refused: edit {edit}'s line in {month} (line 2) is damaged: it does not parse, so "
        "memoryd can neither show nor undo it (memoryd's log says what is wrong with it); mend "
        "that line or delete it; a backup made after that edit holds it whole: tar -xzOf ARCHIVE "
        f"memory/edits/{month.name} prints that month as the backup holds it and changes nothing "
        "(runbook: journal-damaged)"
    )
    for command, arg in (("show", {"id": edit}), ("undo", edit)):
        with pytest.raises(AdminRefused) as refused:
            md.admin(command, arg)
        assert str(refused.value) == said
    assert "Mem two." in md.home.memory_file("memory.md").read_text()  # nothing undone
    as_json = json.loads(md.admin("log", {"json": True}))
    assert as_json["damaged"] == [{"file": str(month), "line": 2, "id": edit, "torn": False}]


def test_a_log_with_no_damaged_line_says_nothing_of_it(md):
    assert "damaged" not in md.admin("log")
    assert json.loads(md.admin("log", {"json": True}))["damaged"] == []
