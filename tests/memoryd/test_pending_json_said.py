"""pending --json carries what pending's text says below its list, as log --json does for its own:
the lines of pending.jsonl that do not parse ("damaged", each with its file, line and the id it
still names), the staged writes whose lines left the file ("lost"), those only the floor file gives
("lost_on_floor", naming it) and those an older memoryd's forget probably took ("taken", naming
the forget). A program reading --json is never told every staged write is listed when one is not.
"""

import json

from memoryd.journal import ids
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import Clock
from tests.memoryd.test_forget_older_pending_taken import _drop_lines, _older_forget

DAY = "2026-09-24"
NOTHING_SAID = {"damaged": [], "lost": None, "lost_on_floor": None, "taken": []}


def _open(root) -> Memoryd:
    md = Memoryd(root, clock=Clock())
    md.store.review_on = True
    return md


def _stage(md: Memoryd, text: str) -> str:
    said = md.call({"action": "add", "file": "user", "text": text})
    return said.split("pending as ")[1].split(";")[0]


def _said(answer: dict) -> dict:
    return {key: answer[key] for key in NOTHING_SAID}


def _text_notes(md: Memoryd) -> list[str]:
    return [line for line in md.admin("pending").splitlines() if line.startswith("(")]


def test_a_whole_pending_jsonl_adds_empty_fields(tmp_path):
    md = _open(tmp_path / "home")
    try:
        waiting = _stage(md, "Owner likes tea.")
        answer = json.loads(md.admin("pending", {"json": True}))
        assert [item["id"] for item in answer["pending"]] == [waiting]
        assert _said(answer) == NOTHING_SAID
        assert _text_notes(md) == []
    finally:
        md.close()


def test_damaged_lost_and_floor_only_writes_are_fields_of_the_json(tmp_path):
    root = tmp_path / "home"
    md = _open(root)
    staged = [_stage(md, f"Fact number {n}.") for n in range(4)]
    md.close()
    home = md.home
    pending = home.memory_file("pending.jsonl")
    floor = home.index_dir / ids.FLOOR_NAME
    lines = pending.read_text().splitlines(keepends=True)
    # the first line removed by hand, the last one torn in half; the floor says 6 were staged
    pending.write_text(lines[1] + lines[2] + lines[3][: len(lines[3]) // 2] + "\n")
    value = json.loads(floor.read_text())
    value["pending"][DAY] = 6
    floor.write_text(json.dumps(value))
    md = _open(root)
    try:
        answer = json.loads(md.admin("pending", {"json": True}))
        assert [item["id"] for item in answer["pending"]] == staged[1:3]
        assert _said(answer) == {
            "damaged": [{"file": str(pending), "line": 3, "id": staged[3]}],
            "lost": {"count": 1, "first": staged[0], "last": staged[0], "runbook": "journal-lost"},
            "lost_on_floor": {
                "count": 2,
                "first": f"p-{DAY}-0005",
                "last": f"p-{DAY}-0006",
                "according_to": str(floor),
                "runbook": "journal-lost",
            },
            "taken": [],
        }
        # the text says the same three things, in the words it said before
        notes = _text_notes(md)
        assert len(notes) == 3
        assert notes[0] == (
            f"(1 damaged line of {pending} not listed ({staged[3]}), line 3: it does not parse; "
            "mend or delete it)"
        )
        assert notes[1].startswith(f"(1 staged write ({staged[0]}) memoryd answered as pending")
        assert notes[2].startswith(
            f"(2 staged writes (p-{DAY}-0005 to p-{DAY}-0006) memoryd answered as pending "
            f"according to {floor} are gone"
        )
    finally:
        md.close()


def test_writes_an_older_forget_took_are_a_field_of_the_json(tmp_path):
    md = _open(tmp_path / "home")
    try:
        taken = _stage(md, "Owner's passport number is capybara-778.")
        kept = _stage(md, "Owner likes tea.")
        md.clock.advance(minutes=1)
        edit = _older_forget(md, [taken])
        md.clock.advance(minutes=1)
        later = _stage(md, "Owner likes rain.")  # handed out after the forget, as is gone
        gone = _stage(md, "Owner likes hills.")
        _drop_lines(md, [gone])
        answer = json.loads(md.admin("pending", {"json": True}))
        assert [item["id"] for item in answer["pending"]] == [kept, later]
        assert _said(answer) == {
            "damaged": [],
            "lost": {"count": 1, "first": gone, "last": gone, "runbook": "journal-lost"},
            "lost_on_floor": None,
            "taken": [{"count": 1, "first": taken, "last": taken, "forget": edit, "date": DAY}],
        }
        assert len(_text_notes(md)) == 2  # the lost write, then the taken one
    finally:
        md.close()


def test_a_page_of_pending_json_still_says_the_damage(tmp_path):
    md = _open(tmp_path / "home")
    try:
        staged = [_stage(md, f"Fact number {n}.") for n in range(3)]
        pending = md.home.memory_file("pending.jsonl")
        lines = pending.read_text().splitlines(keepends=True)
        pending.write_text(lines[0] + "{not json\n" + lines[2])
        answer = json.loads(md.admin("pending", {"json": True, "from": staged[2]}))
        assert [item["id"] for item in answer["pending"]] == [staged[2]]
        assert answer["damaged"] == [{"file": str(pending), "line": 2, "id": None}]
    finally:
        md.close()
