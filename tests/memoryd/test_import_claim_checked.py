"""An import's provenance never makes this home's own record laxer: when the edit an item names
is in this home's journal and wrote that text, the stricter of the claim and the journal line
routes the item (an untrusted write becomes an untrusted note, a higher class stays), and the
line said of the item says so. An item of another home's export (its edit here wrote another
text, its session is none of this home's) is imported as it claims."""

import json

import pytest

from memoryd.memory import notes
from memoryd.writer import WRITE
from tests.callargs import loose_call
from tests.memoryd.owner_data_harness import Memoryd, _apply_call
from tests.memoryd.store_helpers import TAINTED, Clock

TEXT = "The beta stays open until the release."


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home", clock=Clock())
    yield m
    m.close()


def exported(m: Memoryd) -> list[dict]:
    path = m.data("export", format="jsonl")["path"]
    return [json.loads(line) for line in open(path, encoding="utf-8").read().splitlines()]


def hand_in(m: Memoryd, head: dict, items: list[dict], dry_run: bool = False) -> dict:
    data = "".join(json.dumps(x) + "\n" for x in [head, *items])
    (m.home.root / "backups" / "claim.jsonl").write_text(data)
    return m.data("import", name="claim.jsonl", dry_run=dry_run)


def as_entry(item: dict, **claim) -> dict:
    prov = {**item["provenance"], "file": "memory.md", **claim}
    return {"kind": "entry", "file": "memory.md", "text": item["text"], "provenance": prov}


def as_note(item: dict, **claim) -> dict:
    return {**item, "provenance": {**item["provenance"], **claim}}


def the_note(m: Memoryd, text: str = TEXT) -> dict:
    for item in exported(m)[1:]:
        if item["text"] == text:
            return item
    raise AssertionError(f"no item {text!r}")


def labels(m: Memoryd, text: str = TEXT) -> list[tuple[str, str, bool]]:
    data = m.home.memory_file("notes.md").read_bytes()
    return [(n.kind, n.klass, n.untrusted) for n in notes.parse(data) if n.text == text]


def in_memory(m: Memoryd, text: str = TEXT) -> bool:
    return text in m.home.memory_file("memory.md").read_text(encoding="utf-8")


def test_an_entry_claiming_trusted_of_an_untrusted_edit_here_becomes_an_untrusted_note(md):
    md.call({"action": "add", "file": "user", "text": TEXT}, tainted=True)
    head, item = exported(md)[0], the_note(md)
    edit = item["provenance"]["edit"]
    assert item["provenance"]["untrusted"] is True
    for dry_run in (True, False):
        out = hand_in(md, head, [as_entry(item, untrusted=False)], dry_run=dry_run)
        (said,) = out["lines"]
        assert (
            f"its provenance claims trusted, but this home's journal records edit {edit} of "
            f"session {TAINTED['session']} as untrusted" in said
        ), said
        assert "added to memory.md" not in said
    assert not in_memory(md)
    assert TEXT not in md.admin("block", {})
    assert labels(md) == [("noted", "private", True)]  # the note already there, once


def test_a_note_claiming_trusted_of_an_untrusted_edit_here_adds_no_trusted_copy(md):
    md.call({"action": "note", "text": TEXT}, tainted=True)
    head, item = exported(md)[0], the_note(md)
    for kind in ("noted", "moved"):
        source = None if kind == "noted" else "memory.md"  # a moved note names the file it left
        out = hand_in(
            md, head, [as_note({**item, "note": kind, "source": source}, untrusted=False)]
        )
        (said,) = out["lines"]
        assert "this home's journal records edit" in said and "as untrusted" in said, said
    assert labels(md) == [("noted", "private", True)]
    assert "memory-tainted" in md.recall("beta stays open")


def test_a_class_claimed_lower_than_this_homes_journal_keeps_the_higher(md):
    parsed, caller = loose_call(
        json.dumps({"action": "add", "file": "memory", "text": TEXT}),
        session="mm-secret01",
        call_id="call-9",
        taint="secret",
        untrusted=False,
    )
    md.service._writer.submit(WRITE, _apply_call, md.service, parsed, caller).result()
    head, item = exported(md)[0], the_note(md)
    assert item["provenance"]["class"] == "secret"
    out = hand_in(md, head, [as_entry(item, **{"class": "private"})])
    (said,) = out["lines"]
    assert "claims private, but this home's journal records edit" in said, said
    assert "as secret" in said
    assert not in_memory(md)
    assert labels(md) == [("noted", "secret", False)]


def test_a_reimport_of_an_imported_untrusted_item_is_checked_against_its_import_line(md, tmp_path):
    other = Memoryd(tmp_path / "other", clock=Clock())
    try:
        other.call({"action": "note", "text": TEXT}, tainted=True)
        first = exported(other)
    finally:
        other.close()
    assert hand_in(md, first[0], first[1:])["applied"] == 1
    head, item = exported(md)[0], the_note(md)  # its edit is this home's import line
    out = hand_in(md, head, [as_entry(item, untrusted=False)])
    assert "as untrusted" in out["lines"][0], out["lines"]
    assert not in_memory(md)


def test_an_edit_id_that_wrote_another_text_here_leaves_the_claim_as_it_is(md):
    md.call({"action": "note", "text": "Something else entirely."}, tainted=True)
    head, item = exported(md)[0], the_note(md, "Something else entirely.")
    # Another home's item: its session is none of this home's (this home's own tainted session
    # would hold it to that session's label: test_import_floor.py).
    claim = {**as_entry(item, untrusted=False, session="mm-elsewhere01")}
    claim["text"] = "The shed key is under the pot."
    out = hand_in(md, head, [claim])
    assert "added to memory.md" in out["lines"][0], out["lines"]
    assert in_memory(md, "The shed key is under the pot.")
