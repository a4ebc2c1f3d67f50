"""bxctl memory show of an import says what the item was in the home it came from and the label it
came with (class, untrusted), and, for an entry made a note, the file it named and why: the
import's journal line is the owner's (session owner, no taint), so its own label says nothing of
the item. Real homes, real files, real SQLite."""

import json

import pytest

from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import Clock

HEAD = {"format": "boxmaker-memory-export", "version": 1}


def provenance(file: str, klass: str = "private", untrusted: bool = False) -> dict:
    return {
        "file": file,
        "session": "mm-dh45qg",
        "edit": "2026-09-24-0004",
        "time": "2026-09-24T21:02:40Z",
        "class": klass,
        "untrusted": untrusted,
    }


def entry(text: str, **label) -> dict:
    return {
        "kind": "entry",
        "file": "memory.md",
        "text": text,
        "provenance": provenance("memory.md", **label),
    }


def note(text: str, **label) -> dict:
    return {
        "kind": "note",
        "note": "noted",
        "number": 0,
        "source": None,
        "text": text,
        "provenance": provenance("notes.md", **label),
    }


@pytest.fixture
def home(tmp_path):
    m = Memoryd(tmp_path / "home", clock=Clock())
    yield m
    m.close()


def shown(m: Memoryd, item: dict) -> tuple[list[str], dict]:
    """The text and JSON of show of the edit that imported item alone."""
    name = f"{abs(hash(item['text']))}.jsonl"
    (m.home.root / "backups" / name).write_text(json.dumps(HEAD) + "\n" + json.dumps(item) + "\n")
    said = m.data("import", name=name)
    assert said["applied"] == 1, said
    edit = said["lines"][0].rsplit(" as edit ", 1)[1].split(";")[0]
    text = m.admin("show", {"id": edit}).splitlines()
    return text, json.loads(m.admin("show", {"id": edit, "json": True}))


def line(text: list[str], key: str) -> str:
    (found,) = [x for x in text if x.startswith(f"{key:<9} ")]
    return found


def test_an_untrusted_entry_made_a_note_is_shown_untrusted_and_naming_its_file(home):
    text, js = shown(home, entry("Untrusted entry from a web page.", untrusted=True))
    assert line(text, "imported").endswith(
        "(in the home it was exported from): an entry of memory.md there, private, untrusted"
    ), text
    assert line(text, "entries") == (
        "entries   memory.md unchanged; saved as a note in notes.md (untrusted, as exported)"
    )
    assert js["imported"]["untrusted"] is True and js["imported"]["file"] == "memory.md"


def test_an_untrusted_note_is_shown_untrusted(home):
    text, _ = shown(home, note("example.org says March.", untrusted=True))
    assert line(text, "imported").endswith(": a note there, private, untrusted"), text
    assert line(text, "entries") == (
        "entries   none changed; a note in notes.md (untrusted, as exported)"
    )


def test_a_secret_entry_made_a_note_says_its_class(home):
    text, _ = shown(home, entry("The safe code is elsewhere.", klass="secret"))
    assert line(text, "imported").endswith(": an entry of memory.md there, secret, trusted")
    assert line(text, "entries") == (
        "entries   memory.md unchanged; saved as a note in notes.md (secret, as exported)"
    )


def test_a_trusted_entry_added_to_its_file_is_shown_trusted(home):
    text, _ = shown(home, entry("Owner prefers answers in UTC."))
    assert line(text, "imported").endswith(": an entry of memory.md there, private, trusted")
    assert line(text, "entries") == "entries   0 before, 1 after"
    assert not any("untrusted" in x for x in text), text


def test_a_relabel_says_which_note_and_its_labels(home, tmp_path):
    other = Memoryd(tmp_path / "other", clock=Clock())
    try:
        other.call(
            {"action": "note", "text": "Office wifi is called Heron."}, session="mm-homeb0001"
        )
        path = other.data("export", format="jsonl")["path"]
    finally:
        other.close()
    head, item = open(path, encoding="utf-8").read().splitlines()
    shown(home, json.loads(item))  # held here as the other home claimed it: trusted
    raised = json.loads(item)
    raised["provenance"]["untrusted"] = True  # a later export of it says untrusted
    (home.home.root / "backups" / "raised.jsonl").write_text(f"{head}\n{json.dumps(raised)}\n")
    said = home.data("import", name="raised.jsonl")
    edit = said["lines"][0].rsplit(" as edit ", 1)[1].split(";")[0]
    text = home.admin("show", {"id": edit}).splitlines()
    assert line(text, "entries") == (
        "entries   none changed; note 0 of notes.md made untrusted, private (it was trusted, "
        "private): the export's label is stricter"
    ), text
