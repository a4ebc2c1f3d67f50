"""The edit journal when the wall clock goes back over a month's end (NTP just after midnight on
the 1st), or ran ahead and is mended: every edit is appended after the lines made before it, so
each reader finds it as its file's latest edit; no hand edit is journalled, no write refused, ids
stay unique, and log, --from, show and undo see the edits in the order they were made."""

import datetime as dt
import json

from tests.callargs import loose_call

from .store_helpers import CLEAN, Clock, args, journal_lines, new_store, owner

UTC = dt.UTC


def add(store, file: str, text: str, who: dict = CLEAN) -> str:
    return store.call(*loose_call(args(action="add", file=file, text=text), **who))


def logged_ids(store, n: int = 50) -> list[str]:
    return [line.split()[0] for line in owner(store, "log", str(n)).splitlines()]


def months(store) -> dict[str, list[str]]:
    return {
        p.name: [json.loads(raw)["id"] for raw in p.read_text().splitlines()]
        for p in sorted(store.home.edits.iterdir())
    }


def test_a_clock_stepped_back_over_a_months_end_journals_no_hand_edit(tmp_path):
    clock = Clock(dt.datetime(2026, 12, 1, 0, 0, 10, tzinfo=UTC))
    store = new_store(tmp_path, clock=clock)
    add(store, "memory", "Entry A.")
    clock.now = dt.datetime(2026, 11, 30, 23, 59, 55, tzinfo=UTC)  # NTP steps it back 15 s
    add(store, "memory", "Entry B.")
    clock.advance(seconds=3)
    add(store, "memory", "Entry C.")
    made = ["2026-12-01-0001", "2026-11-30-0001", "2026-11-30-0002"]
    lines = journal_lines(store)
    assert [x["id"] for x in lines] == made
    assert [x["time"] for x in lines][1:] == ["2026-11-30T23:59:55Z", "2026-11-30T23:59:58Z"]
    assert months(store) == {"2026-12.jsonl": made}
    assert logged_ids(store) == made
    later = owner(store, "log", {"n": 5, "from": made[1]})
    assert [line.split()[0] for line in later.splitlines()] == made[1:]
    assert store.journal_index.latest("memory.md").id == made[2]
    # Back in December: ids go on after those of the day, and a restart finds no hand edit.
    clock.now = dt.datetime(2026, 12, 1, 0, 0, 20, tzinfo=UTC)
    add(store, "memory", "Entry D.")
    again = new_store(tmp_path, clock=clock)
    again.detect_hand_edits()
    add(again, "memory", "Entry E.")
    assert again.undo("2026-12-01-0003").startswith("undid 2026-12-01-0003 as edit 2026-12-01-0004")
    lines = journal_lines(again)
    assert [x["id"] for x in lines] == [*made, *(f"2026-12-01-{n:04d}" for n in (2, 3, 4))]
    assert not [x for x in lines if x["action"] == "hand-edit"]


def test_a_clock_that_ran_ahead_and_was_mended_keeps_sessions_writing(tmp_path):
    clock = Clock(dt.datetime(2026, 12, 4, 8, tzinfo=UTC))
    store = new_store(tmp_path, clock=clock)
    add(store, "user", "Owner's name is Ada.")  # 2026-12-04-0001, before the clock ran ahead
    clock.now = dt.datetime(2027, 6, 1, 3, tzinfo=UTC)  # a bad RTC at boot
    add(store, "user", "Prefers answers in UTC.")
    clock.now = dt.datetime(2026, 12, 4, 9, tzinfo=UTC)  # NTP mends it
    add(store, "user", "Lives in Lisbon.")
    # memoryd restarted, its record of the ids handed out lost: the journal alone gives them.
    (store.home.memory / ".ids.json").unlink()
    store = new_store(tmp_path, clock=clock)
    store.detect_hand_edits()
    add(store, "user", "Has a cat named Ada.")
    add(store, "user", "Walks at noon.")
    made = ["2026-12-04-0001", "2027-06-01-0001", *(f"2026-12-04-{n:04d}" for n in (2, 3, 4))]
    assert months(store) == {"2026-12.jsonl": made[:1], "2027-06.jsonl": made[1:]}
    assert logged_ids(store, 2) == made[-2:]
    assert [x["id"] for x in journal_lines(store)] == made
    assert not [x for x in journal_lines(store) if x["action"] == "hand-edit"]
    assert "Has a cat named Ada." in owner(store, "show", {"id": "2026-12-04-0003"})
    later = owner(store, "log", {"n": 5, "from": "2026-12-04-0003"})
    assert [line.split()[0] for line in later.splitlines()] == made[-2:]
    assert store.undo("2026-12-04-0004").startswith("undid 2026-12-04-0004 as edit 2026-12-04-0005")


def test_ids_of_the_day_above_a_stepped_back_edit_are_not_handed_out_again(tmp_path):
    # The newest file ends on a line of the day before, the day's own line above it: with
    # .ids.json gone (lost, or a backup restored into a new home, which carries none) the journal
    # alone must give the next id.
    clock = Clock(dt.datetime(2026, 12, 1, 0, 0, 10, tzinfo=UTC))
    store = new_store(tmp_path, clock=clock)
    add(store, "memory", "Entry A.")
    clock.now = dt.datetime(2026, 11, 30, 23, 59, 55, tzinfo=UTC)  # NTP steps it back
    add(store, "memory", "Entry B.")
    (store.home.memory / ".ids.json").unlink()
    clock.now = dt.datetime(2026, 12, 1, 0, 1, 30, tzinfo=UTC)
    again = new_store(tmp_path, clock=clock)
    add(again, "memory", "Entry C.")
    made = ["2026-12-01-0001", "2026-11-30-0001", "2026-12-01-0002"]
    assert months(again) == {"2026-12.jsonl": made}
    assert "Entry A." in owner(again, "show", {"id": made[0]})
    assert "Entry C." in owner(again, "show", {"id": made[2]})


def test_a_days_id_pasted_into_an_earlier_month_file_is_not_handed_out_again(tmp_path):
    clock = Clock(dt.datetime(2026, 12, 1, 8, tzinfo=UTC))
    store = new_store(tmp_path, clock=clock)
    add(store, "memory", "Entry A.")
    line = (
        (store.home.edits / "2026-12.jsonl")
        .read_text()
        .replace("2026-12-01-0001", "2026-12-01-0007")
    )
    (store.home.edits / "2026-10.jsonl").write_text(line)  # a journal concatenated by hand
    (store.home.memory / ".ids.json").unlink()
    again = new_store(tmp_path, clock=clock)
    add(again, "memory", "Entry B.")
    assert months(again)["2026-12.jsonl"] == ["2026-12-01-0001", "2026-12-01-0008"]
