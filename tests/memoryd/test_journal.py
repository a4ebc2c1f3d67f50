"""The edit journal: its lines and ids, bxctl memory log, and undo of the latest edit of a file."""

import datetime as dt
import json

import pytest

from memoryd.errors import AdminRefused
from memoryd.journal.journal import Journal, append_record
from memoryd.memory import entries, notes
from tests.callargs import loose_call

from .store_helpers import (
    CLEAN,
    TAINTED,
    Clock,
    args,
    fill,
    journal_lines,
    line_of,
    memory_path,
    new_store,
    owner,
    snapshot,
)

FIELDS = {"id", "time", "session", "call", "action", "file", "to", "before", "after", "untrusted"}


# --- lines and ids ------------------------------------------------------------------------------
def test_every_kind_of_edit_is_journalled_with_every_field(tmp_path):
    store = new_store(tmp_path)
    store.call(*loose_call(args(action="add", file="memory", text="one"), **CLEAN))
    store.call(*loose_call(args(action="replace", file="memory", old="one", text="uno"), **CLEAN))
    store.call(*loose_call(args(action="add", file="memory", text="two"), **CLEAN))
    store.call(*loose_call(args(action="remove", file="memory", old="two"), **CLEAN))
    store.call(*loose_call(args(action="note", text="seen"), **TAINTED))
    store.call(*loose_call(args(action="add", file="user", text="told"), **TAINTED))
    store.call(
        *loose_call(
            args(
                action="consolidate",
                file="memory",
                entries=[{"old": "uno", "move": True}, {"text": "new"}],
            ),
            **CLEAN,
        ),
    )
    lines = journal_lines(store)
    assert all(FIELDS <= set(line) for line in lines)
    summary = [
        (x["action"], x["file"], x["to"], x["before"], x["after"], x["untrusted"]) for x in lines
    ]
    assert summary == [
        ("add", "memory.md", "memory.md", [], ["one"], False),
        ("replace", "memory.md", "memory.md", ["one"], ["uno"], False),
        ("add", "memory.md", "memory.md", ["uno"], ["uno", "two"], False),
        ("remove", "memory.md", "memory.md", ["uno", "two"], ["uno"], False),
        ("note", None, "notes.md", [], ["seen"], True),
        ("add", "user.md", "notes.md", [], ["told"], True),
        ("consolidate", "memory.md", "memory.md", ["uno"], ["new"], False),
    ]
    assert [x["id"] for x in lines] == [f"2026-09-24-{n:04d}" for n in range(1, 8)]
    assert {x["time"] for x in lines} == {"2026-09-24T21:02:11Z"}
    assert lines[0]["session"] == CLEAN["session"] and lines[0]["call"] == CLEAN["call_id"]
    assert lines[4]["session"] == TAINTED["session"]
    assert lines[3]["notes"] == [{"kind": "dropped", "text": "two"}]
    assert lines[6]["notes"] == [{"kind": "moved", "text": "uno"}]
    assert [p.name for p in store.home.edits.iterdir()] == ["2026-09.jsonl"]


def test_ids_count_within_the_day_and_files_by_month(tmp_path):
    clock = Clock(dt.datetime(2026, 9, 30, 23, 59, 58, tzinfo=dt.UTC))
    store = new_store(tmp_path, clock=clock)
    store.call(*loose_call(args(action="note", text="a"), **CLEAN))
    store.call(*loose_call(args(action="note", text="b"), **CLEAN))
    clock.advance(seconds=5)
    store.call(*loose_call(args(action="note", text="c"), **CLEAN))
    clock.advance(days=1)
    store.call(*loose_call(args(action="note", text="d"), **CLEAN))
    assert [x["id"] for x in journal_lines(store)] == [
        "2026-09-30-0001",
        "2026-09-30-0002",
        "2026-10-01-0001",
        "2026-10-02-0001",
    ]
    assert sorted(p.name for p in store.home.edits.iterdir()) == ["2026-09.jsonl", "2026-10.jsonl"]


def test_ids_are_derived_from_the_journal_across_restarts(tmp_path):
    store = new_store(tmp_path)
    store.call(*loose_call(args(action="note", text="a"), **CLEAN))
    again = new_store(tmp_path)
    again.call(*loose_call(args(action="note", text="b"), **CLEAN))
    assert [x["id"] for x in journal_lines(again)] == ["2026-09-24-0001", "2026-09-24-0002"]


def test_times_are_utc(tmp_path):
    east = dt.timezone(dt.timedelta(hours=2))
    store = new_store(tmp_path, clock=Clock(dt.datetime(2026, 9, 25, 1, 30, 0, tzinfo=east)))
    store.call(*loose_call(args(action="note", text="a"), **CLEAN))
    [line] = journal_lines(store)
    assert (line["id"], line["time"]) == ("2026-09-24-0001", "2026-09-24T23:30:00Z")
    assert memory_path(store, "notes.md").read_text().startswith("§ noted 2026-09-24T23:30Z ")


def test_entries_are_stored_raw(tmp_path):
    store = new_store(tmp_path)
    text = 'quote " backslash \\ and *markdown* @here'
    store.call(*loose_call(args(action="add", file="memory", text=text), **CLEAN))
    assert journal_lines(store)[-1]["after"] == [text]


def test_a_torn_or_damaged_line_is_skipped_and_the_next_starts_on_its_own_line(tmp_path, caplog):
    store = new_store(tmp_path)
    store.call(*loose_call(args(action="note", text="a"), **CLEAN))
    path = store.home.edits / "2026-09.jsonl"
    with open(path, "ab") as f:
        f.write(b'{"id": "2026-09-24-0002", "tim')  # a crash mid-append
    store.call(*loose_call(args(action="note", text="b"), **CLEAN))
    lines = journal_lines(store)
    assert [x["after"] for x in lines] == [["a"], ["b"]]
    assert "2026-09.jsonl: line 2 is not a JSON object" in caplog.text
    assert path.read_bytes().count(b"\n") == 3


def test_append_record_writes_one_json_line(tmp_path):
    path = tmp_path / "edits" / "2026-09.jsonl"
    append_record(path, {"a": "é"})
    assert path.read_bytes() == '{"a": "é"}\n'.encode()
    assert Journal.__name__  # the module imports cleanly
    assert json.loads(path.read_text()) == {"a": "é"}


# --- bxctl memory log [N] -------------------------------------------------------------------------
def test_log_lists_the_last_n_edits_one_line_each(tmp_path):
    store = new_store(tmp_path)
    assert owner(store, "log") == "no edits yet"
    for n in range(12):
        store.call(*loose_call(args(action="add", file="memory", text=f"entry {n}"), **CLEAN))
    store.call(*loose_call(args(action="add", file="user", text="planted"), **TAINTED))
    lines = owner(store, "log").splitlines()
    assert len(lines) == 10
    assert (
        lines[-1] == f"2026-09-24-0013  2026-09-24T21:02:11Z  {TAINTED['session']}  add  "
        "user.md, saved to notes.md"
    )
    assert lines[0] == f"2026-09-24-0004  2026-09-24T21:02:11Z  {CLEAN['session']}  add  memory.md"
    assert owner(store, "log", "2").splitlines() == lines[-2:]
    assert "entry" not in owner(store, "log", "13")  # entries are not shown
    assert len(owner(store, "log", "100").splitlines()) == 13


@pytest.mark.parametrize(
    ("arg", "refusal"),
    [
        ("0", "log takes a number of edits from 1 to 10000, not '0'"),
        ("-1", "log takes a number of edits from 1 to 10000, not '-1'"),
        ("10001", "log takes a number of edits from 1 to 10000, not '10001'"),
        ({"n": 0}, "refused: invalid log argument: n: "),
        ({"n": True}, "refused: invalid log argument: n: "),
        ({"n": "3"}, "refused: invalid log argument: n: "),
    ],
)
def test_log_refuses_a_bad_n(tmp_path, arg, refusal):
    store = new_store(tmp_path)
    with pytest.raises(AdminRefused) as e:
        owner(store, "log", arg)
    assert str(e.value).startswith(refusal)


# --- undo ---------------------------------------------------------------------------------------
def test_undo_of_the_latest_edit_restores_before_and_is_journalled(tmp_path):
    store = new_store(tmp_path)
    fill(store, "memory", ["one", "two"])
    store.call(
        *loose_call(
            args(
                action="consolidate",
                file="memory",
                entries=[{"old": "one", "move": True}, {"old": "two", "text": "2"}],
            ),
            **CLEAN,
        ),
    )
    notes_before = memory_path(store, "notes.md").read_bytes()
    answer = store.undo("2026-09-24-0003")
    assert answer == (
        "undid 2026-09-24-0003 as edit 2026-09-24-0004: memory.md holds its entries from before "
        "that edit again (9 of 2,200 characters); it takes effect in the next session"
    )
    assert memory_path(store, "memory.md").read_text() == "one\n§\ntwo\n"
    assert memory_path(store, "notes.md").read_bytes() == notes_before  # moved entries stay
    last = journal_lines(store)[-1]
    assert (last["action"], last["undoes"], last["file"], last["to"]) == (
        "undo",
        "2026-09-24-0003",
        "memory.md",
        "memory.md",
    )
    assert (last["before"], last["after"], last["session"]) == (["2"], ["one", "two"], None)
    assert owner(store, "log", "1").endswith("owner  undo  memory.md (undoes 2026-09-24-0003)")


def test_undo_of_an_undo_redoes(tmp_path):
    store = new_store(tmp_path)
    fill(store, "user", ["a"])
    store.undo("2026-09-24-0001")
    assert memory_path(store, "user.md").read_bytes() == b""
    store.undo("2026-09-24-0002")
    assert entries.parse(memory_path(store, "user.md").read_text()) == ["a"]


def test_undo_refused_when_not_the_latest_edit_of_its_file(tmp_path):
    store = new_store(tmp_path)
    fill(store, "memory", ["a", "b"])
    fill(store, "user", ["c"])  # another file's edit does not count
    before = snapshot(store)
    with pytest.raises(AdminRefused) as e:
        store.undo("2026-09-24-0001")
    assert str(e.value) == (
        "refused: edit 2026-09-24-0001 is not the latest edit of memory.md (the latest is "
        "2026-09-24-0002); only the latest edit of a file can be undone"
    )
    assert snapshot(store) == before
    store.undo("2026-09-24-0002")
    with pytest.raises(AdminRefused, match="the latest is 2026-09-24-0004"):
        store.undo("2026-09-24-0002")  # the undo is now the latest edit of memory.md


def test_a_hand_edit_is_journalled_and_then_undoable(tmp_path):
    store = new_store(tmp_path)
    fill(store, "memory", ["a"])
    memory_path(store, "memory.md").write_text("a\n§\nowner's addition\n")
    with pytest.raises(AdminRefused) as e:
        store.undo("2026-09-24-0001")
    # The hand edit was journalled first, so it is the latest edit of memory.md now.
    assert str(e.value) == (
        "refused: edit 2026-09-24-0001 is not the latest edit of memory.md (the latest is "
        "2026-09-24-0002); only the latest edit of a file can be undone"
    )
    hand = line_of(store, "2026-09-24-0002")
    assert hand.action == "hand-edit" and hand.session == "owner"
    assert hand.before == ["a"] and hand.after == ["a", "owner's addition"]
    assert memory_path(store, "memory.md").read_text() == "a\n§\nowner's addition\n"
    store.undo("2026-09-24-0002")
    assert memory_path(store, "memory.md").read_text() == "a\n"


def test_undo_accepts_the_same_entries_written_differently(tmp_path):
    store = new_store(tmp_path)
    fill(store, "memory", ["a"])
    memory_path(store, "memory.md").write_bytes(b"\xef\xbb\xbf\r\na\r\n")
    store.undo("2026-09-24-0001")
    assert memory_path(store, "memory.md").read_bytes() == b""


@pytest.mark.parametrize(
    ("edit_id", "reason"),
    [
        (
            "2026-09-24-0001",
            "refused: edit 2026-09-24-0001 went to notes.md, which is append-only; "
            "it cannot be undone",
        ),
        (
            "2026-09-24-0002",
            "refused: edit 2026-09-24-0002 went to notes.md, which is append-only; "
            "it cannot be undone",
        ),
        ("2026-09-24-0099", "refused: the journal holds no edit 2026-09-24-0099"),
        ("2026-08-01-0001", "refused: the journal holds no edit 2026-08-01-0001"),
        ("../../etc/passwd", "refused: '../../etc/passwd' is not an edit id (YYYY-MM-DD-NNNN)"),
        ("", "refused: '' is not an edit id (YYYY-MM-DD-NNNN)"),
    ],
)
def test_undo_refusals(tmp_path, edit_id, reason):
    store = new_store(tmp_path)
    store.call(*loose_call(args(action="note", text="n"), **CLEAN))
    store.call(*loose_call(args(action="add", file="memory", text="t"), **TAINTED))
    before = snapshot(store)
    with pytest.raises(AdminRefused) as e:
        store.undo(edit_id)
    assert str(e.value) == reason
    assert snapshot(store) == before


def test_undo_refused_when_the_file_is_unreadable(tmp_path):
    store = new_store(tmp_path)
    fill(store, "memory", ["a"])
    memory_path(store, "memory.md").write_bytes(b"\xff")
    with pytest.raises(
        AdminRefused, match=r"^refused: memory\.md is not valid UTF-8 \(byte 0\); undo"
    ):
        store.undo("2026-09-24-0001")


def test_undo_of_a_remove_keeps_the_dropped_entry_in_notes(tmp_path):
    store = new_store(tmp_path)
    fill(store, "memory", ["a"])
    store.call(*loose_call(args(action="remove", file="memory", old="a"), **CLEAN))
    store.undo("2026-09-24-0002")
    assert entries.parse(memory_path(store, "memory.md").read_text()) == ["a"]
    assert [e.kind for e in notes.parse(memory_path(store, "notes.md").read_bytes())] == ["dropped"]
