"""notes.md saved by an editor in a one-byte encoding (Latin-1, Windows-1252): "§" and "·" become
the single bytes 0xA7 and 0xB7, and read as UTF-8 no header parsed, so every note left recall,
search, stats and export without a word. A line that holds no UTF-8 sequence is read as
Windows-1252, so the notes and their labels stand; stats names the first line that is not UTF-8.
A UTF-8 line with one damaged byte still costs one character."""

import datetime as dt

import pytest

from memoryd.memory import notes
from tests.memoryd.owner_data_harness import Memoryd

WHEN = dt.datetime(2026, 9, 24, 18, 20, tzinfo=dt.UTC)
TEXTS = [
    ("Gate code is 4711, café at the corner.", False),
    ("Fetched: the key is under the mat.", True),
]


def _file(encoding: str) -> bytes:
    return "".join(
        notes.noted(text, WHEN, "mm-1", "private", untrusted) for text, untrusted in TEXTS
    ).encode(encoding)


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1", "cp1252"])
def test_a_file_saved_in_a_one_byte_encoding_keeps_its_notes_and_labels(encoding):
    parsed = notes.parse(_file(encoding))
    assert [(n.text, n.untrusted, n.damaged) for n in parsed] == [
        (text, untrusted, False) for text, untrusted in TEXTS
    ]
    said = notes.not_utf8(_file(encoding))
    assert (said is None) == (encoding == "utf-8")
    if said is not None:
        assert said.startswith("memory/notes.md line 1 is not UTF-8")


@pytest.mark.parametrize(
    "raw,text",
    [
        (b"caf\xc3\xa9 \xff ok\n", "café \ufffd ok"),  # UTF-8 with one damaged byte
        (b"caf\xe9 ok\n", "café ok"),  # Latin-1
        (b"\x93quoted\x94\n", "\u201cquoted\u201d"),  # Windows-1252's quotes
        (b"plain\n", "plain"),
    ],
)
def test_each_line_is_read_as_what_it_was_saved_as(raw, text):
    assert notes.decode_line(raw).rstrip("\n") == text


def test_recall_export_and_stats_after_the_owner_saved_notes_as_latin1(tmp_path):
    md = Memoryd(tmp_path / "home")
    try:
        md.call({"action": "note", "text": "Gate code is 4711, café at the corner."})
        md.call({"action": "note", "text": "The heron nests by the pond."})
        path = md.home.memory_file("notes.md")
        path.write_bytes(path.read_text().encode("latin-1"))  # saved by an editor
        md.index.reindex()
        assert "Gate code is 4711, café at the corner." in md.recall("gate code")
        assert "heron nests" in md.recall("heron")
        said = md.admin("stats", {})
        assert "memory/notes.md line 1 is not UTF-8" in said
    finally:
        md.close()
