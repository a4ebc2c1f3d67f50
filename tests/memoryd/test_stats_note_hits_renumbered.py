"""stats' hit counts after the owner edits notes.md by hand: memoryd reads it again and numbers
the notes anew, and each hit is still counted for the note the recall returned (the recall log
keeps the note's digest beside its number), or for none, said, when that can no longer be told;
never for the note that took its number."""

import datetime as dt
import json

from proto.records import utc_text
from tests.memoryd.owner_data_harness import Memoryd

SESSION = "mm-y73sxj3p"
NOTES = [
    (f"§ moved 2026-09-24T20:14Z from memory.md in session {SESSION}", "Apple pie recipe."),
    (f"§ moved 2026-09-24T20:14Z from memory.md in session {SESSION}", "Banana bread recipe."),
    (f"§ moved 2026-09-24T20:15Z from memory.md in session {SESSION}", "Cherry tart notes."),
]


def _notes(pairs) -> str:
    return "".join(f"{header}\n{text}\n" for header, text in pairs)


def _home(tmp_path) -> Memoryd:
    notes = tmp_path / "home" / "memory" / "notes.md"
    notes.parent.mkdir(parents=True, mode=0o700)
    notes.write_text(_notes(NOTES))
    (notes.parent / "soul.md").write_text("You are a careful agent.\n")
    for path in notes.parent.iterdir():
        path.chmod(0o600)
    return Memoryd(tmp_path / "home")


def _stats(md: Memoryd) -> tuple[dict[str, int], list[str]]:
    found = json.loads(md.admin("stats", '{"json": true}'))
    return {m["entry"].split()[0]: m["hits"] for m in found["moved"]}, found["unread"]


def test_a_note_keeps_its_hits_when_a_hand_edit_renumbers_it(tmp_path):
    md = _home(tmp_path)
    try:
        for _ in range(3):
            assert "Banana bread" in md.recall("banana")
        [line] = {ln for ln in md.index.home.recalls.iterdir()}
        hits = [json.loads(raw)["hits"] for raw in line.read_text().splitlines()]
        assert all(h[0]["record"] == 1 and len(h[0]["note"]) == 16 for h in hits)
        assert _stats(md) == ({"Apple": 0, "Banana": 3, "Cherry": 0}, [])
        # the owner removes the apple note by hand: banana is note:0 now, cherry note:1
        path = md.index.home.memory_file("notes.md")
        path.write_text(_notes(NOTES[1:]))
        counts, unread = _stats(md)
        assert counts == {"Banana": 3, "Cherry": 0} and unread == []
        shown = md.admin("stats", "{}")
        assert "note:0 from memory.md: Banana bread recipe." in shown
        assert "never recalled (1):\n  note:1: Cherry tart notes." in shown
        assert "Cherry" in md.recall("cherry")  # recalled under its new number
        assert _stats(md)[0] == {"Banana": 3, "Cherry": 1}
        # the owner rewrites the banana note's text: its hits can no longer be told, and say so
        path.write_text(_notes([(NOTES[1][0], "Banana loaf."), NOTES[2]]))
        counts, unread = _stats(md)
        assert counts == {"Banana": 0, "Cherry": 1}
        assert unread == [
            "recall log: 3 note hits not counted: notes.md no longer holds the note as the"
            " recall found it (edited by hand since)"
        ]
    finally:
        md.close()


def test_a_line_written_before_hits_kept_a_digest_counts_only_for_a_note_of_its_kind(tmp_path):
    """Lines of an older memoryd name a note by kind, session and number only: such a hit counts
    for the note at its number while that note is of its kind and session, else for none."""
    md = _home(tmp_path)
    try:
        hits = [
            {"kind": "moved", "session": SESSION, "record": 1, "tag": "identity"},
            {"kind": "noted", "session": "mm-other", "record": 2, "tag": "memory"},
        ]
        now = dt.datetime.now(dt.UTC)
        line = {"time": utc_text(now), "session": "mm-a", "query": "q", "k": 5, "hits": hits}
        md.index.home.recalls.mkdir(parents=True, exist_ok=True)
        month = md.index.home.recalls_month(now)
        month.write_text(json.dumps(line, separators=(",", ":")) + "\n")
        counts, unread = _stats(md)
        assert counts == {"Apple": 0, "Banana": 1, "Cherry": 0}
        assert unread == [
            "recall log: 1 note hit not counted: notes.md no longer holds the note as the recall"
            " found it (edited by hand since)"
        ]
    finally:
        md.close()
