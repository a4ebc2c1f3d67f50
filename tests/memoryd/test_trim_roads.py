"""A text held with U+001C..U+001F at an edge (an entry or a note edited by hand: the parse trims
Unicode White_Space only, proto.trim) is one text to the parse and to every road that finds a
text by its words: forget by text, an import's "already in", promote by text. Each finds it as the
parse reads it, the control character included, and none takes it for the text without it."""

import json

import pytest

from memoryd.errors import AdminRefused
from memoryd.journal import forgotten, forgottenmarker
from memoryd.memory import entries, notes
from memoryd.search import query
from tests.memoryd.owner_data_harness import Memoryd

SECRET = "The safe's code is 90210."
HELD = "\x1f" + SECRET  # as a hand edit left it: a unit separator before the text


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def hand_edit_memory(m: Memoryd, *texts: str) -> None:
    path = m.home.memory_file("memory.md")
    path.write_bytes(entries.file_bytes(list(texts)))
    assert entries.parse(path.read_text(encoding="utf-8")) == list(texts)


def hand_edit_note(m: Memoryd, text: str) -> None:
    m.call({"action": "note", "text": "Owner keeps bees."})
    path = m.home.memory_file("notes.md")
    data = path.read_bytes().replace(b"Owner keeps bees.", text.encode())
    path.write_bytes(data)
    assert [n.text for n in notes.parse(data)] == [text]


def test_forget_by_text_takes_the_entry_as_the_parse_reads_it(md):
    hand_edit_memory(md, "Owner likes tea.", HELD)
    with pytest.raises(AdminRefused, match="names nothing to forget"):
        md.data("forget", id=SECRET)  # the entry is not this text
    assert entries.parse(md.home.memory_file("memory.md").read_text()) == ["Owner likes tea.", HELD]
    out = md.data("forget", id=HELD)
    assert out["message"].startswith("forgot"), out["message"]
    assert entries.parse(md.home.memory_file("memory.md").read_text()) == ["Owner likes tea."]
    listed = {f.digest for f in forgotten.held_texts(md.home)}
    assert forgotten.digest(HELD) in listed and forgotten.digest(SECRET) not in listed


def test_forget_by_text_takes_a_note_as_the_parse_reads_it(md):
    hand_edit_note(md, HELD)
    with pytest.raises(AdminRefused, match="names nothing to forget"):
        md.data("forget", id=SECRET)
    md.data("forget", id=HELD)
    held = notes.parse(md.home.memory_file("notes.md").read_bytes())
    assert len(held) == 1 and forgottenmarker.is_marker(held[0].text)


def exported_items(m: Memoryd) -> list[dict]:
    path = m.data("export", format="jsonl")["path"]
    return [json.loads(line) for line in open(path, encoding="utf-8").read().splitlines()]


def test_an_import_finds_the_entry_already_held_as_the_parse_reads_it(md):
    hand_edit_memory(md, "Owner likes tea.", HELD)
    items = exported_items(md)
    assert [x["text"] for x in items if x.get("kind") == "entry"] == ["Owner likes tea.", HELD]
    (md.home.root / "backups" / "again.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in items)
    )
    out = md.data("import", name="again.jsonl", dry_run=True)
    said = json.dumps(out)
    assert said.count("already in memory.md") == 2, said
    assert "not imported" not in said, said


def test_an_import_of_the_text_without_the_control_is_not_already_held(md):
    hand_edit_memory(md, HELD)
    items = exported_items(md)
    entry = next(x for x in items if x.get("kind") == "entry")
    entry["text"] = SECRET
    (md.home.root / "backups" / "other.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in items)
    )
    md.data("import", name="other.jsonl")
    assert entries.parse(md.home.memory_file("memory.md").read_text()) == [HELD, SECRET]


def test_promote_by_text_finds_the_note_as_the_parse_reads_it(md):
    hand_edit_note(md, HELD)
    before = md.home.memory_file("memory.md").read_bytes()
    with pytest.raises(AdminRefused, match="no note of notes.md reads exactly"):
        md.admin("promote", {"ref": SECRET, "file": "memory"})
    # Found, and refused as its text would be anywhere else: a control character (rule 1) never
    # goes into the block, and is never cut off on the way in.
    with pytest.raises(AdminRefused, match=r"^refused: note:0 cannot go into memory.md: "):
        md.admin("promote", {"ref": HELD, "file": "memory"})
    assert md.home.memory_file("memory.md").read_bytes() == before


def test_search_shows_the_text_as_forget_takes_it():
    # a snippet trimmed with str.strip() showed the words without the control, and forget of the
    # words shown named nothing
    assert query.snippet(f" {HELD}\n", ["safe"]) == HELD
