"""An edit id (or pending id) names the edit it named when the owner was shown it, never a later
edit given an id already handed out because the journal (or pending.jsonl) was deleted or replaced
meanwhile, while memoryd ran or while it was stopped."""

import json
import shutil

import pytest

from memoryd.errors import AdminRefused
from memoryd.journal.ids import ISSUED_NAME
from memoryd.owner import history
from memoryd.owner.args import LogArg
from tests.callargs import loose_call
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import CLEAN, args, journal_lines, memory_path, new_store

DAY = "2026-09-24"


def ids_listed(md: Memoryd) -> dict[str, str]:
    """bxctl memory log as the owner reads it: id -> the file the edit named."""
    listed = {}
    for line in md.admin("log").splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[0].startswith(DAY):
            listed[fields[0]] = fields[4]
    return listed


def two_adds(md: Memoryd) -> dict[str, str]:
    md.call({"action": "add", "file": "user", "text": "User zero."})
    md.call({"action": "add", "file": "memory", "text": "Mem two."})
    listed = ids_listed(md)
    assert listed == {f"{DAY}-0001": "user.md", f"{DAY}-0002": "memory.md"}
    return listed


def files(md: Memoryd) -> tuple[str, str]:
    return (
        md.home.memory_file("memory.md").read_text(),
        md.home.memory_file("user.md").read_text(),
    )


# --- the journal deleted or replaced while memoryd runs ----------------------------------------
def _delete_months(md: Memoryd) -> None:
    for path in md.home.edits.glob("*.jsonl"):
        path.unlink()


def _delete_folder(md: Memoryd) -> None:
    shutil.rmtree(md.home.edits)


def _older_copy(md: Memoryd) -> None:
    (month,) = md.home.edits.glob("*.jsonl")
    first = month.read_bytes().splitlines(keepends=True)[0]
    month.write_bytes(first)  # as a copy made after the first edit, put back by hand


@pytest.mark.parametrize("lose", [_delete_months, _delete_folder, _older_copy])
def test_an_id_whose_line_is_gone_is_refused_and_never_handed_out_again(tmp_path, lose):
    md = Memoryd(tmp_path / "home")
    try:
        listed = two_adds(md)
        (edit,) = [i for i, f in listed.items() if f == "memory.md"]
        before = files(md)
        lose(md)
        with pytest.raises(AdminRefused) as e:
            md.admin("undo", edit)
        assert str(e.value) == (
            f"refused: the journal no longer holds edit {edit}: memoryd journalled it, but its "
            "line has left edits/ since (deleted or replaced); bxctl memory log lists the edits "
            "it holds (runbook: journal-lost)"
        )
        with pytest.raises(AdminRefused, match=f"holds no edit {edit}|no longer holds edit {edit}"):
            md.admin("show", {"id": edit})
        assert files(md) == before  # user.md keeps its entry, memory.md the one asked about
        # What memoryd journals next goes on after the ids it handed out.
        md.call({"action": "note", "text": "after the loss"})
        given = [line["id"] for line in journal_lines(md.store)]
        assert not set(given) & set(listed) - set(_kept(lose, listed))
        assert max(given) > max(listed)
        with pytest.raises(AdminRefused, match="no longer holds edit"):
            md.admin("undo", edit)
        assert files(md) == before
    finally:
        md.close()


def _kept(lose, listed: dict[str, str]) -> list[str]:
    return [min(listed)] if lose is _older_copy else []


def test_ids_go_on_after_a_restart_that_finds_the_journal_gone(tmp_path):
    md = Memoryd(tmp_path / "home")
    listed = two_adds(md)
    md.close()
    _delete_months(md)
    again = Memoryd(tmp_path / "home")  # start journals both files as hand edits
    try:
        given = [line["id"] for line in journal_lines(again.store)]
        assert len(given) == 2 and min(given) > max(listed)
        before = files(again)
        for edit in listed:
            with pytest.raises(AdminRefused, match=f"no longer holds edit {edit}"):
                again.admin("undo", edit)
        assert files(again) == before
    finally:
        again.close()


def test_a_damaged_or_missing_ids_file_leaves_the_journal_to_decide(tmp_path):
    store = new_store(tmp_path)
    store.call(*loose_call(args(action="note", text="a"), **CLEAN))
    kept = store.home.memory / ISSUED_NAME
    assert json.loads(kept.read_text()) == {"edit": {DAY: 1}, "first": {"edit": f"{DAY}-0001"}}
    kept.write_text("{not json")
    store.call(*loose_call(args(action="note", text="b"), **CLEAN))
    kept.unlink()
    store.call(*loose_call(args(action="note", text="c"), **CLEAN))
    again = new_store(tmp_path)
    again.call(*loose_call(args(action="note", text="d"), **CLEAN))
    assert [x["id"] for x in journal_lines(again)] == [f"{DAY}-{n:04d}" for n in (1, 2, 3, 4)]
    assert json.loads(kept.read_text()) == {"edit": {DAY: 4}, "first": {"edit": f"{DAY}-0001"}}


# --- pending ids ---------------------------------------------------------------------------------
def test_a_pending_id_is_not_given_again_when_pending_jsonl_is_lost(tmp_path):
    store = new_store(tmp_path, review=True)
    store.call(*loose_call(args(action="add", file="memory", text="first"), **CLEAN))
    shown = f"p-{DAY}-0001"
    memory_path(store, "pending.jsonl").unlink()
    store.call(*loose_call(args(action="add", file="memory", text="second"), **CLEAN))
    (item,) = store.review.items()
    assert item.id == f"p-{DAY}-0002"
    for write in (store.accept, store.reject):
        # Not "not waiting", as for an id never handed out: said to be lost with the file.
        with pytest.raises(AdminRefused, match=f"{shown} was staged, but its line has left"):
            write(shown)
    assert memory_path(store, "memory.md").read_text() == ""
    again = new_store(tmp_path, review=True)  # kept across a restart too
    memory_path(again, "pending.jsonl").unlink()
    again.call(*loose_call(args(action="add", file="memory", text="third"), **CLEAN))
    assert [i.id for i in again.review.items()] == [f"p-{DAY}-0003"]


def test_a_day_the_clock_once_ran_ahead_to_does_not_hide_todays_ids(tmp_path):
    """An id of a later day kept (the clock ran ahead once, or the file was edited) must not
    stop today's ids being kept: after the journal is lost, none of them is given again."""
    store = new_store(tmp_path)
    kept = store.home.memory / ISSUED_NAME
    kept.write_text(json.dumps({"edit": "2099-01-01-0007"}))  # as one id was first kept
    listed = []
    for text in ("a", "b", "c"):
        listed.append(store.call(*loose_call(args(action="note", text=text), **CLEAN)))
    ids = [line["id"] for line in journal_lines(store)]
    for month in store.journal.month_files():
        month.unlink()
    store.call(*loose_call(args(action="note", text="d"), **CLEAN))
    again = [line["id"] for line in journal_lines(store)]
    assert again and again[0] not in ids, (ids, again)
    for edit in ids:
        with pytest.raises(AdminRefused, match=f"no longer holds edit {edit}"):
            store.undo(edit)


def test_an_id_written_otherwise_than_memoryd_writes_it_is_no_lost_edit(tmp_path):
    store = new_store(tmp_path)
    store.call(*loose_call(args(action="note", text="a"), **CLEAN))
    store.call(*loose_call(args(action="note", text="b"), **CLEAN))
    assert store.journal.missing_sentence(f"{DAY}-00002") == (
        f"refused: the journal holds no edit {DAY}-00002"
    )


def test_log_of_a_lost_journal_says_so_rather_than_no_edits(tmp_path):
    store = new_store(tmp_path)
    store.call(*loose_call(args(action="note", text="a"), **CLEAN))
    for month in store.journal.month_files():
        month.unlink()
    with pytest.raises(AdminRefused, match=f"journalled edits up to {DAY}-0001"):
        history.log_answer(store.journal, LogArg(n=10))
    fresh = new_store(tmp_path / "fresh")
    assert history.log_answer(fresh.journal, LogArg(n=10)) == "no edits yet"
