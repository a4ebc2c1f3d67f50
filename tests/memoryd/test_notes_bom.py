"""notes.md saved with a byte-order mark in front (Notepad, some editors): its first note is still a
note, found by recall, counted and numbered as before; never text before the first header."""

import datetime as dt

from memoryd.memory import notes
from tests.memoryd.owner_data_harness import Memoryd

WHEN = dt.datetime(2026, 9, 24, 18, 20, tzinfo=dt.UTC)


def test_a_byte_order_mark_is_no_text_and_the_first_header_still_counts():
    first = notes.noted("Zebra crossing note.", WHEN, "mm-1", "private", False)
    second = notes.noted("Second note.", WHEN, "mm-1", "private", False)
    data = first.encode() + second.encode()
    plain, marked = notes.parse(data), notes.parse(b"\xef\xbb\xbf" + data)
    assert (
        [n.text for n in marked]
        == [n.text for n in plain]
        == [
            "Zebra crossing note.",
            "Second note.",
        ]
    )
    assert [n.number for n in marked] == [0, 1]
    assert marked[0].start == 0 and marked[1].start == plain[1].start + 3  # bytes, the mark's too


def test_recall_and_reindex_find_the_first_note_of_a_file_with_a_mark(tmp_path):
    md = Memoryd(tmp_path / "home")
    try:
        md.call({"action": "note", "text": "Zebra crossing near the school."})
        md.call({"action": "note", "text": "Heron by the pond."})
        path = md.home.memory_file("notes.md")
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())  # saved by an editor
        md.index.reindex()
        assert "Zebra crossing near the school." in md.recall("zebra crossing")
        assert "note:0" in md.admin("search", {"query": "zebra crossing"})
        assert md.data("forget", id="note:0", dry_run=True)["texts"] == [
            "Zebra crossing near the school."
        ]
    finally:
        md.close()
