"""A power cut during a journal append leaves its last line cut short (the write it journalled
already stands in the files). The next start says so in memoryd's log, once, naming the file, the
line and why; log and undo name that line truthfully (cut short, not "does not parse", and the log
they point to holds it); the next write starts a line of its own, under an id after the torn
line's, with no warning that a line was deleted."""

import json
import logging

import pytest

from memoryd.errors import AdminRefused
from memoryd.journal import damaged
from tests.memoryd.store_helpers import CLEAN, args, journal_lines, loose_call, new_store, owner

DAY = "2026-09-24"
TORN = "cut short, as a crash or power cut during its append leaves it"


def _note(store, text: str) -> None:
    store.call(*loose_call(args(action="note", text=text), **CLEAN))


@pytest.mark.parametrize("cut", [2, 40, 200])
def test_a_torn_last_line_is_said_at_start_and_named_by_log_and_undo(tmp_path, caplog, cut):
    store = new_store(tmp_path)
    _note(store, "first note")
    _note(store, "second note")
    (month,) = store.home.edits.glob("*.jsonl")
    data = month.read_bytes()
    month.write_bytes(data[:-cut])  # the power cut tore the second line's append
    with caplog.at_level(logging.INFO):
        store = new_store(tmp_path)  # memoryd starts again
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert said == [
        f"{month}: line 2 (edit {DAY}-0002) is damaged: {TORN}; skipped: the write it journalled"
        " stands in the files, but memoryd can neither show nor undo it; delete that line, nothing"
        " else needs mending (runbook: journal-damaged)"
    ]
    caplog.clear()
    with caplog.at_level(logging.INFO):
        listed = owner(store, "log")
        with pytest.raises(AdminRefused) as refused:
            owner(store, "undo", f"{DAY}-0002")
    assert listed.splitlines()[-1] == (
        f"(1 damaged journal line (edit {DAY}-0002) not listed, in {month}: line 2, it was {TORN}"
        " (the write stands in the files); memoryd's log says what is wrong)"
    )
    assert f"(line 2) is damaged: it was {TORN}" in str(refused.value)
    # --json says the same: which line, and that it was torn
    assert json.loads(owner(store, "log", {"json": True}))["damaged"] == [
        {"file": str(month), "line": 2, "id": f"{DAY}-0002", "torn": True}
    ]
    assert "memoryd's log names it" in str(refused.value)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # said once already
    assert "second note" in store.home.memory_file("notes.md").read_text()

    _note(store, "third note")
    assert [line["id"] for line in journal_lines(store)] == [f"{DAY}-0001", f"{DAY}-0003"]
    assert "no longer holds" not in caplog.text and "deleted" not in caplog.text
    assert month.read_bytes().startswith(data[: len(data) - cut] + b"\n")


def test_a_line_damaged_in_its_middle_is_not_called_torn(tmp_path):
    store = new_store(tmp_path)
    _note(store, "first note")
    (month,) = store.home.edits.glob("*.jsonl")
    raw = month.read_bytes()
    month.write_bytes(raw.replace(b'"time": "', b'"time": ', 1).rstrip(b"\n"))
    [found] = store.journal.check_end()
    assert found.number == 1 and not found.torn and found.why == "not a JSON object"


@pytest.mark.parametrize(
    ("raw", "torn"),
    [
        (b'{"id": "2026-09-24-0002", "tim', True),
        (b'{"id": "2026-09-24-0002", "time": "2026-09-24T10:00:00Z"', True),
        (b'{"id": "2026-09-24-0002", "text": "caf\xc3', True),  # cut inside a character
        (b'{"id": "2026-09-24-0002"}\0\0\0', True),  # the zero bytes a file system may leave
        (b'{"id": "2026-09-24-0002", "time": 2026-09-24T10:00:00Z", "x": 1}', False),
        (b"not json at all", False),
    ],
)
def test_what_is_cut_short(raw, torn):
    assert damaged.cut_short(raw) is torn
