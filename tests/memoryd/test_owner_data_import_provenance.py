"""After an import, an export's provenance.edit of an imported item names this home's import edit
(the one `bxctl memory show` shows here and that brought the item in), never the id it had on the
home it came from, which here is another edit (every home counts from 0001 each day). The session,
time and label stay those it came with, and the round trip A -> B -> C keeps this true."""

import json

import pytest

from memoryd.owner import show
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import Clock


def exported(m: Memoryd) -> list[dict]:
    out = m.data("export", format="jsonl")
    lines = open(out["path"], encoding="utf-8").read().splitlines()
    return [json.loads(line) for line in lines]


def imported(m: Memoryd, items: list[dict], name: str = "in.jsonl") -> dict:
    (m.home.root / "backups" / name).write_text("".join(json.dumps(x) + "\n" for x in items))
    return m.data("import", name=name)


def brought(m: Memoryd, edit: str) -> set[str]:
    """The texts the edit of this home added to a file or appended to notes.md."""
    line = show.find(m.store.journal, edit)
    return (set(line.after) - set(line.before)) | {note.text for note in line.notes}


def assert_edits_are_this_homes(m: Memoryd, items: list[dict]) -> None:
    for item in items:
        edit = item["provenance"]["edit"]
        assert edit is not None, item
        assert item["text"] in brought(m, edit), (item, m.admin("show", {"id": edit}))


def fill_a(a: Memoryd) -> None:
    a.call({"action": "add", "file": "user", "text": "Prefers answers in UTC."}, session="monday")
    a.call({"action": "note", "text": "The plumber comes on Tuesday."}, session="monday")
    a.call({"action": "add", "file": "memory", "text": "example.org says March."}, tainted=True)


@pytest.fixture
def homes(tmp_path):
    made = {n: Memoryd(tmp_path / n, clock=Clock()) for n in "abc"}
    yield made
    for m in made.values():
        m.close()


def test_an_imported_items_edit_is_the_import_here_not_an_edit_of_the_same_id(homes):
    a, b = homes["a"], homes["b"]
    fill_a(a)
    first = exported(a)
    b.call(
        {"action": "add", "file": "memory", "text": "The garden needs watering."}, session="garden"
    )
    b.call({"action": "note", "text": "The shed key is under the pot."}, session="garden")
    assert imported(b, first)["applied"] == 3
    second = {i["text"]: i for i in exported(b)[1:]}
    assert_edits_are_this_homes(b, list(second.values()))
    for item in first[1:]:
        now = second[item["text"]]
        assert now["provenance"]["edit"] != item["provenance"]["edit"]  # the same id is B's own
        assert show.find(b.store.journal, now["provenance"]["edit"]).action == "import"
        kept = ("session", "time", "class", "untrusted")
        assert {k: now["provenance"][k] for k in kept} == {k: item["provenance"][k] for k in kept}
        # show of the import says where it came from, as the other home named it
        shown = b.admin("show", {"id": now["provenance"]["edit"]})
        came = f"imported  from edit {item['provenance']['edit']}"
        assert came in shown and "(in the home it was exported from)" in shown, shown


def test_the_round_trip_a_to_b_to_c_keeps_every_edit_this_homes(homes):
    a, b, c = homes["a"], homes["b"], homes["c"]
    fill_a(a)
    for m in (b, c):
        m.call(
            {"action": "add", "file": "memory", "text": f"Home {m.home.root.name}."}, session="own"
        )
    assert imported(b, exported(a))["applied"] == 3
    from_b = exported(b)
    assert imported(c, from_b)["applied"] == 4  # B's own entry among them
    third = exported(c)[1:]
    assert_edits_are_this_homes(c, third)
    labels = {i["text"]: (i["provenance"]["session"], i["provenance"]["untrusted"]) for i in third}
    assert labels["Prefers answers in UTC."] == ("monday", False)
    assert labels["example.org says March."][1] is True
    # imported again, nothing changes: the items are matched by text, not by edit
    assert imported(c, from_b, "again.jsonl")["applied"] == 0


def test_an_export_made_before_this_change_still_imports(homes):
    b = homes["b"]
    old = {
        "kind": "entry",
        "file": "user.md",
        "text": "Owner lives in Lisbon.",
        "provenance": {
            "file": "user.md",
            "session": "monday",
            "edit": "2026-09-24-0001",
            "time": "2026-09-24T21:02:11Z",
            "class": "private",
            "untrusted": False,
        },
    }
    head = {"format": "boxmaker-memory-export", "version": 1}
    assert imported(b, [head, old])["applied"] == 1
    (item,) = exported(b)[1:]
    assert item["provenance"]["session"] == "monday"
    assert_edits_are_this_homes(b, [item])
