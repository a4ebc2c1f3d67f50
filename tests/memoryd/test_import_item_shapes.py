"""import takes exactly the item lines docs/export-schema-v1.json takes: an entry with none of a
note's fields, a note without file, a moved or dropped note with the file it left (never guessed);
a line the schema refuses refuses the import, naming the line, before anything is written. And an
item naming a provenance.edit no edit id reads (a number of thousands of digits) names no edit:
it imports as any other, never stopping part way."""

import copy
import json
from pathlib import Path

import pytest

from memoryd.errors import AdminRefused
from tests.memoryd.owner_data_harness import Memoryd

REPO = Path(__file__).resolve().parents[2]
HEAD = {"format": "boxmaker-memory-export", "version": 1}
PROV = {
    "file": "notes.md",
    "session": "mm-a",
    "edit": None,
    "time": "2026-09-24T21:02:11Z",
    "class": "private",
    "untrusted": False,
}
ENTRY = {
    "kind": "entry",
    "file": "memory.md",
    "text": "An entry.",
    "provenance": {**PROV, "file": "memory.md"},
}
NOTED = {"kind": "note", "note": "noted", "number": 0, "source": None, "text": "A note."}
MOVED = {"kind": "note", "note": "moved", "number": 1, "source": "user.md", "text": "Left."}


def _with(item: dict, **changes) -> dict:
    out = copy.deepcopy(item)
    out.setdefault("provenance", dict(PROV))
    for key, value in changes.items():
        if value is ...:
            out.pop(key, None)
        else:
            out[key] = value
    return out


# (what it is, the item): lines the schema refuses
REFUSED = [
    ("an entry with a note's fields", _with(ENTRY, note="moved", number=7, source="user.md")),
    ("an entry with a source", _with(ENTRY, source=None)),
    ("an entry without its file", _with(ENTRY, file=...)),
    ("a note with a file", _with(NOTED, file="memory.md")),
    ("a note without its kind", _with(NOTED, note=...)),
    ("a moved note without source", _with(MOVED, source=...)),
    ("a dropped note whose source is null", _with(MOVED, note="dropped", source=None)),
    ("a note numbered below 0", _with(NOTED, number=-1)),
    ("a note numbered with text", _with(NOTED, number="3")),
    ("an item of no kind", _with(NOTED, kind=...)),
    ("an item of another kind", _with(NOTED, kind="fact")),
]
# lines the schema takes
TAKEN = [
    ("an entry", _with(ENTRY)),
    ("a noted note", _with(NOTED)),
    ("a noted note without number or source", _with(NOTED, number=..., source=...)),
    ("a noted note of number null", _with(NOTED, number=None)),
    ("a moved note", _with(MOVED)),
    ("a dropped note", _with(MOVED, note="dropped", source="memory.md", text="Gone.")),
]


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


@pytest.fixture(scope="module")
def schema():
    return json.loads((REPO / "docs" / "export-schema-v1.json").read_text())


def _hand(m: Memoryd, items: list[dict], name: str = "in.jsonl") -> str:
    data = "".join(json.dumps(x) + "\n" for x in [HEAD, *items])
    (m.home.root / "backups" / name).write_text(data)
    return name


def _files(m: Memoryd) -> dict:
    return {p: p.read_bytes() for p in m.home.memory.rglob("*") if p.is_file()}


@pytest.mark.parametrize(("what", "item"), REFUSED, ids=[w for w, _ in REFUSED])
def test_a_line_the_schema_refuses_refuses_the_import_naming_it(md, schema, what, item):
    jsonschema = pytest.importorskip("jsonschema")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(item, schema)
    before = _files(md)
    name = _hand(md, [_with(ENTRY, text="A good entry before it."), item])
    for dry_run in (True, False):
        with pytest.raises(AdminRefused, match=r"^refused: line 3 .*; nothing was imported$"):
            md.admin("import", {"name": name, "dry_run": dry_run})
    assert _files(md) == before


@pytest.mark.parametrize(("what", "item"), TAKEN, ids=[w for w, _ in TAKEN])
def test_a_line_the_schema_takes_is_imported(md, schema, what, item):
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(item, schema)
    out = json.loads(md.admin("import", {"name": _hand(md, [item])}))
    assert out["lines"] == [out["lines"][0]] and "not imported" not in out["lines"][0]
    held = md.home.memory_file(item.get("file", "notes.md")).read_text()
    assert item["text"] in held


def test_a_moved_note_keeps_the_file_it_left(md):
    md.admin("import", {"name": _hand(md, [_with(MOVED)])})
    notes = md.home.memory_file("notes.md").read_text()
    assert " from user.md in session mm-a" in notes and "from memory.md" not in notes


def test_the_docs_example_lines_fit_the_schema_and_import(md, schema):
    jsonschema = pytest.importorskip("jsonschema")
    text = (REPO / "docs" / "export-format.md").read_text()
    examples = [json.loads(line) for line in text.splitlines() if line.startswith('{"kind": ')]
    assert len(examples) == 3
    for item in examples:
        jsonschema.validate(item, schema)
    out = json.loads(md.admin("import", {"name": _hand(md, examples)}))
    assert len(out["lines"]) == 3


LONG_EDIT = "2026-09-24-" + "1" * 5000  # past int()'s 4,300 digits


@pytest.mark.parametrize("dry_run", [True, False])
def test_an_edit_id_of_thousands_of_digits_names_no_edit_and_imports(md, dry_run):
    md.call({"action": "add", "file": "memory", "text": "Something of this home."})
    items = [_with(NOTED, text=f"Good note {n}.", number=n) for n in range(3)]
    last = _with(NOTED, text="The last note.", number=3)
    last["provenance"]["edit"] = LONG_EDIT
    entry = _with(ENTRY, text="An entry naming it too.")
    entry["provenance"]["edit"] = LONG_EDIT
    out = json.loads(
        md.admin("import", {"name": _hand(md, [*items, last, entry]), **{"dry_run": dry_run}})
    )
    assert len(out["lines"]) == 5
    assert not any("not imported" in line for line in out["lines"])
    notes = md.home.memory_file("notes.md").read_text()
    memory = md.home.memory_file("memory.md").read_text()
    assert ("The last note." in notes) is (not dry_run)
    assert ("An entry naming it too." in memory) is (not dry_run)
