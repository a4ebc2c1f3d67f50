"""index/ids-handed-out.json (the floor: the spare copy of the ids handed out, kept for memory/
removed whole) damaged or edited by hand never refuses a write: a number memoryd cannot have
handed out (the day's last id, or far above memory/.ids.json) is said once naming the file and
passed over, and the next write rewrites it. A number the floor may truly hold still counts, so
no id is handed out twice. Every warning or refusal about an id handed out names the copy the
number came from, never the journal for a line it does not hold."""

import json
import logging

import pytest

from memoryd.errors import AdminRefused
from memoryd.journal import idform, ids
from memoryd.journal.idcopies import FLOOR_AHEAD
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import Clock

DAY = "2026-09-24"
LAST = idform.NUMBER_MOST


def _set(path, kind: str, number: int) -> None:
    value = json.loads(path.read_text())
    value.setdefault(kind, {})[DAY] = number
    path.write_text(json.dumps(value))


def _home_with_one_edit(tmp_path, review: bool = False):
    root = tmp_path / "home"
    md = Memoryd(root, clock=Clock())
    md.store.review_on = review
    if review:
        said = md.call({"action": "add", "file": "memory", "text": "Waits for review."})
        assert f"pending as p-{DAY}-0001" in said
    md.call({"action": "note", "text": "Zebra notes about kiwis."})
    md.close()
    return root, md.home


def _start(root, caplog, review: bool = False) -> tuple[Memoryd, list[str]]:
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        md = Memoryd(root, clock=Clock())
    md.store.review_on = review
    return md, [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def _ids(md: Memoryd) -> list[str]:
    return [r.id for r in md.store.journal.records()]


@pytest.mark.parametrize("number", [LAST, 1 + FLOOR_AHEAD + 1, LAST - 1])
def test_a_floor_number_memoryd_cannot_have_handed_out_is_said_and_passed_over(
    tmp_path, caplog, number
):
    root, home = _home_with_one_edit(tmp_path)
    floor = home.index_dir / ids.FLOOR_NAME
    _set(floor, "edit", number)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        md = Memoryd(root, clock=Clock())
        try:
            assert md.call({"action": "note", "text": "The boiler code is 7781."}) == "noted"
            md.call({"action": "note", "text": "And another."})
            assert _ids(md) == [f"{DAY}-0001", f"{DAY}-0002", f"{DAY}-0003"]
        finally:
            md.close()
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    damaged = [w for w in dict.fromkeys(warned) if "damaged" in w]
    assert damaged == [
        f"{floor}: damaged or edited by hand: it names {DAY}-{number:04d} as handed out, which "
        f"memoryd cannot have done (the last id a day can have, or more than {FLOOR_AHEAD:,} "
        f"above what {home.memory / '.ids.json'} holds); passed over (the journal and .ids.json "
        "give the next ids) and rewritten at the next write"
    ]
    assert sum(w == damaged[0] for w in warned) == 1  # said once, though read in several places
    assert not [w for w in warned if "no longer holds" in w]
    assert json.loads(floor.read_text())["edit"] == {DAY: 3}


def test_a_floor_number_memoryd_may_have_handed_out_still_counts_and_is_named(tmp_path, caplog):
    root, home = _home_with_one_edit(tmp_path)
    floor = home.index_dir / ids.FLOOR_NAME
    _set(floor, "edit", 7)  # .ids.json older, or a write of it failed: edits 2 to 7 were given
    md, _ = _start(root, caplog)
    try:
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            md.call({"action": "note", "text": "After the older .ids.json."})
        assert _ids(md) == [f"{DAY}-0001", f"{DAY}-0008"]
        [said] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    finally:
        md.close()
    assert said == (
        f"{home.edits}/2026-09.jsonl: the journal no longer holds edit {DAY}-0007, the last "
        f"memoryd handed out according to {floor} (its line was deleted, replaced or restored "
        f"from an older copy, or {ids.FLOOR_NAME} is damaged); ids go on after it"
    )


def test_ids_json_at_the_day_s_last_id_refuses_naming_it_not_the_journal(tmp_path, caplog):
    root, home = _home_with_one_edit(tmp_path)
    record = home.memory / ".ids.json"
    _set(record, "edit", LAST)
    md, _ = _start(root, caplog)
    try:
        notes = md.home.memory_file("notes.md").read_bytes()
        with pytest.raises(Exception) as refused:
            md.call({"action": "note", "text": "Refused."})
        assert md.home.memory_file("notes.md").read_bytes() == notes
        assert _ids(md) == [f"{DAY}-0001"]
    finally:
        md.close()
    said = str(refused.value)
    assert "the journal holds edit" not in said
    assert (
        f"according to {record}, memoryd handed out edit {DAY}-{LAST}, the last id a day can "
        f"have (the journal holds none past {DAY}-0001); no edit can be journalled until "
        "tomorrow; .ids.json damaged or edited by hand? Remove it while memoryd is stopped"
    ) in said


def test_a_damaged_pending_floor_does_not_stop_staging(tmp_path, caplog):
    root, home = _home_with_one_edit(tmp_path, review=True)
    floor = home.index_dir / ids.FLOOR_NAME
    _set(floor, "pending", LAST)
    md, warned = _start(root, caplog, review=True)
    try:
        said = md.call({"action": "add", "file": "memory", "text": "Waits too."})
        assert f"pending as p-{DAY}-0002" in said
        assert "staged write" not in md.admin("pending")  # none said to be gone
    finally:
        md.close()
    assert [w for w in warned if str(floor) in w and f"p-{DAY}-{LAST}" in w]
    assert json.loads(floor.read_text())["pending"] == {DAY: 2}


def test_ids_json_at_the_day_s_last_pending_id_refuses_naming_it(tmp_path, caplog):
    root, home = _home_with_one_edit(tmp_path, review=True)
    record = home.memory / ".ids.json"
    _set(record, "pending", LAST)
    md, _ = _start(root, caplog, review=True)
    try:
        with pytest.raises(Exception) as refused:
            md.call({"action": "add", "file": "memory", "text": "Refused."})
    finally:
        md.close()
    said = str(refused.value)
    assert "pending.jsonl or the journal holds" not in said
    assert (
        f"according to {record}, memoryd handed out p-{DAY}-{LAST}, the last pending id a day "
        f"can have (neither {home.memory_file('pending.jsonl')} nor the journal holds one past "
        f"p-{DAY}-0001); no edit can be staged until tomorrow; .ids.json damaged"
    ) in said


def test_show_of_an_edit_only_the_floor_gives_names_the_floor(tmp_path, caplog):
    """The journal holds 0001; the floor alone says 0002 to 0007 were handed out. Their lines are
    said gone according to the floor (which may be the damaged copy), never as the journal's
    fact; once a line of that range above an id is journalled, the id is vouched for."""
    root, home = _home_with_one_edit(tmp_path)
    floor = home.index_dir / ids.FLOOR_NAME
    _set(floor, "edit", 7)
    md, _ = _start(root, caplog)
    try:
        with pytest.raises(AdminRefused) as refused:
            md.admin("show", {"id": f"{DAY}-0005"})
        assert str(refused.value) == (
            f"refused: the journal holds no edit {DAY}-0005: according to {floor}, memoryd "
            f"journalled it (or {ids.FLOOR_NAME} is damaged), and its line has left edits/ "
            "since (deleted or replaced); bxctl memory log lists the edits it holds (runbook: "
            "journal-lost)"
        )
        with pytest.raises(AdminRefused) as refused:
            md.admin("show", {"id": f"{DAY}-0009"})  # never handed out: not said gone
        assert str(refused.value) == f"refused: the journal holds no edit {DAY}-0009"
    finally:
        md.close()
    lines = [json.loads(x) for x in (home.edits / "2026-09.jsonl").read_text().splitlines()]
    lines.append({**lines[0], "id": f"{DAY}-0006"})  # a line of the range, above 0005
    (home.edits / "2026-09.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    md, _ = _start(root, caplog)
    try:
        with pytest.raises(AdminRefused) as refused:
            md.admin("show", {"id": f"{DAY}-0005"})
        assert f"refused: the journal no longer holds edit {DAY}-0005: memoryd journalled it" in (
            str(refused.value)
        )
    finally:
        md.close()
