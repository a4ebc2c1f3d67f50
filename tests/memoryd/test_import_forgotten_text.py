"""An import of an export made before a forget brings none of what was forgotten back: each item
whose text the owner made memoryd forget (an entry of memory.md or user.md, a note, or a session
record's words) is skipped, named as forgotten in its line and counted in the answer. forget lists
the digest of each text it takes in forgotten.jsonl, never the text."""

import json
import shutil

import pytest

from memoryd.journal import forgotten
from tests.memoryd.owner_data_harness import Memoryd

SECRET = "Bank card PIN is 4321."
KEPT = "Project Falcon ships in May."


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def _fill(m: Memoryd, where: str) -> str:
    """SECRET written where, with KEPT beside it; the id that forgets SECRET."""
    if where == "note":
        m.call({"action": "note", "text": KEPT})
        m.call({"action": "note", "text": SECRET})
        return "note:1"
    file = "user" if where == "user.md" else "memory"
    m.call({"action": "add", "file": file, "text": KEPT})
    m.call({"action": "add", "file": file, "text": SECRET})
    return f"{where}:2"


def _export(m: Memoryd, tmp_path) -> str:
    """An export, kept aside and handed over again later as old.jsonl."""
    path = tmp_path / "old.jsonl"
    shutil.copy(m.data("export")["path"], path)
    return str(path)


def _hand(m: Memoryd, path: str) -> str:
    shutil.copy(path, m.home.root / "backups" / "old.jsonl")
    return "old.jsonl"


def _block_and_notes(m: Memoryd) -> str:
    return m.admin("block", {"json": True}) + m.home.memory_file("notes.md").read_text()


@pytest.mark.parametrize("where", ["memory.md", "user.md", "note"])
@pytest.mark.parametrize("by", ["id", "words"])
@pytest.mark.parametrize("dry_run", [False, True])
def test_an_import_of_an_older_export_skips_what_was_forgotten(md, tmp_path, where, by, dry_run):
    ref = _fill(md, where)
    old = _export(md, tmp_path)
    md.data("forget", id=ref if by == "id" else SECRET)
    assert SECRET not in _block_and_notes(md)
    listed = forgotten.path(md.home).read_text()
    assert SECRET not in listed and forgotten.digest(SECRET) in listed
    out = md.data("import", name=_hand(md, old), dry_run=dry_run)
    assert SECRET not in _block_and_notes(md)
    assert out["forgotten"] == 1 and out["applied"] == 0
    assert "1 item the owner made memoryd forget, left out" in out["message"]
    line = next(x for x in out["lines"] if "Bank card" in x)
    assert "forget this text on" in line and "skipped" in line
    assert sum("already in" in x for x in out["lines"]) == 1  # KEPT, still there


def test_surrounding_whitespace_does_not_hide_a_forgotten_text(md, tmp_path):
    """Forget compares texts trimmed: so does the digest."""
    _fill(md, "memory.md")
    old = _export(md, tmp_path)
    md.data("forget", id=SECRET)
    items = [json.loads(x) for x in open(old, encoding="utf-8").read().splitlines()]
    for item in items[1:]:
        item["text"] = f"  {item['text']}\n"
    padded = tmp_path / "padded.jsonl"
    padded.write_text("".join(json.dumps(x) + "\n" for x in items), encoding="utf-8")
    out = md.data("import", name=_hand(md, str(padded)))
    assert out["forgotten"] == 1
    assert SECRET not in _block_and_notes(md)


def test_an_older_forgotten_file_without_digests_still_reads_and_imports(md, tmp_path):
    """forgotten.jsonl written before forgets listed digests: its keys hold, nothing is
    skipped as forgotten that the file cannot name."""
    _fill(md, "memory.md")
    old = _export(md, tmp_path)
    md.data("forget", id="memory.md:2")
    path = forgotten.path(md.home)
    path.write_text("".join(x + "\n" for x in path.read_text().splitlines() if '"digest"' not in x))
    for month in md.home.edits.iterdir():  # and journal lines that name no digests
        month.write_text(month.read_text().replace('"digests"', '"was"'))
    assert forgotten.texts(md.home) == frozenset()
    out = md.data("import", name=_hand(md, old))
    assert out["forgotten"] == 0
