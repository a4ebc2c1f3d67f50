"""Export on one home, import on another that holds the same text under another label, export
that one and import it back: nothing is duplicated and nothing untrusted is made trusted. A note
is the same note by its kind, text, session and time, whatever label a home gives it; an entry of
memory.md or user.md is its text. Real homes, real files, real SQLite, two of each."""

import json

import pytest

from memoryd.memory import notes
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import Clock

TEXT = "Office wifi is called Heron."
A_SESSION = "mm-homea0001"
B_SESSION = "mm-homeb0001"


@pytest.fixture
def homes(tmp_path):
    a = Memoryd(tmp_path / "a", clock=Clock())
    b = Memoryd(tmp_path / "b", clock=Clock())
    yield a, b
    a.close()
    b.close()


def carry(source: Memoryd, target: Memoryd, name: str) -> dict:
    """source's export imported on target."""
    path = source.data("export", format="jsonl")["path"]
    (target.home.root / "backups" / name).write_bytes(open(path, "rb").read())
    return target.data("import", name=name)


def held(m: Memoryd, text: str = TEXT) -> list[tuple[str, str, bool]]:
    data = m.home.memory_file("notes.md").read_bytes()
    return sorted((n.session, n.klass, n.untrusted) for n in notes.parse(data) if n.text == text)


def journal(m: Memoryd) -> list[dict]:
    return [
        json.loads(line)
        for path in sorted(m.home.edits.glob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]


def test_an_own_trusted_note_comes_back_raised_and_is_kept_once_as_trusted(homes):
    a, b = homes
    a.call({"action": "note", "text": TEXT}, session=A_SESSION)
    b.call({"action": "note", "text": TEXT}, tainted=True, session=B_SESSION)
    carry(a, b, "a.jsonl")
    # B raises A's note: it holds the text from a session that read untrusted content.
    assert held(b) == [(A_SESSION, "private", True), (B_SESSION, "private", True)]
    back = carry(b, a, "b.jsonl")
    assert held(a) == [(A_SESSION, "private", False), (B_SESSION, "private", True)]
    (kept,) = [x for x in back["lines"] if "already in notes.md as trusted" in x]
    assert f"session {A_SESSION}'s own write" in kept and "this home's label kept" in kept
    assert back["applied"] == 1 and back["skipped"] == 1
    # Once more each way: nothing changes.
    assert carry(a, b, "a2.jsonl")["applied"] == 0
    assert carry(b, a, "b2.jsonl")["applied"] == 0
    assert held(a) == [(A_SESSION, "private", False), (B_SESSION, "private", True)]
    assert held(b) == [(A_SESSION, "private", True), (B_SESSION, "private", True)]


def test_an_own_untrusted_note_stays_once_and_the_other_homes_trusted_one_is_kept(homes):
    a, b = homes
    a.call({"action": "note", "text": TEXT}, tainted=True, session=A_SESSION)
    b.call({"action": "note", "text": TEXT}, session=B_SESSION)
    carry(a, b, "a.jsonl")
    assert held(b) == [(A_SESSION, "private", True), (B_SESSION, "private", False)]
    carry(b, a, "b.jsonl")
    # A raises B's trusted note (A holds the text untrusted); its own stays once, untrusted.
    assert held(a) == [(A_SESSION, "private", True), (B_SESSION, "private", True)]
    # Back on B: its own clean note comes raised, and B's journal keeps it trusted, once.
    again = carry(a, b, "a2.jsonl")
    assert held(b) == [(A_SESSION, "private", True), (B_SESSION, "private", False)]
    assert again["applied"] == 0
    assert any(f"session {B_SESSION}'s own write" in x for x in again["lines"])


def test_an_imported_note_claimed_stricter_later_is_relabelled_not_copied(homes):
    a, b = homes
    b.call({"action": "note", "text": TEXT}, session=B_SESSION)
    carry(b, a, "b.jsonl")  # A holds B's note as B claimed it: trusted
    assert held(a) == [(B_SESSION, "private", False)]
    path = b.data("export", format="jsonl")["path"]
    lines = open(path, encoding="utf-8").read().splitlines()
    item = json.loads(lines[-1])
    item["provenance"]["untrusted"] = True  # another home's view of it: untrusted
    (a.home.root / "backups" / "raised.jsonl").write_text(f"{lines[0]}\n{json.dumps(item)}\n")
    for dry_run in (True, False):
        said = a.data("import", name="raised.jsonl", dry_run=dry_run)
        (line,) = said["lines"]
        assert "does not record" in line, line
        assert "no copy added, and the note made untrusted" in line, line
    # A's journal does not record B's session: the stricter label is kept, on the one note.
    assert held(a) == [(B_SESSION, "private", True)]
    last = journal(a)[-1]
    assert last["action"] == "import" and last["to"] == "notes.md" and last["notes"] == []
    assert last["imported"]["untrusted"] is True
    assert last["note"]["was"] == {"class": "private", "untrusted": False}
    # The index follows: recall serves the one note, as untrusted.
    recalled = a.recall("Heron")
    assert recalled.count(TEXT) == 1 and "memory-tainted" in recalled, recalled
    assert a.data("import", name="raised.jsonl")["applied"] == 0
    # And a trusted claim of it now leaves it untrusted.
    (a.home.root / "backups" / "b2.jsonl").write_bytes(open(path, "rb").read())
    assert a.data("import", name="b2.jsonl")["applied"] == 0
    assert held(a) == [(B_SESSION, "private", True)]


def test_an_untrusted_claim_of_a_text_this_home_does_not_hold_is_added_untrusted(homes):
    a, b = homes
    a.call({"action": "note", "text": "Another text altogether."}, session=A_SESSION)
    b.call({"action": "note", "text": TEXT}, tainted=True, session=B_SESSION)
    said = carry(b, a, "b.jsonl")
    assert said["applied"] == 1
    assert held(a) == [(B_SESSION, "private", True)]


def test_an_own_entry_comes_back_as_an_untrusted_note_and_is_not_copied(homes):
    a, b = homes
    a.call({"action": "add", "file": "memory", "text": TEXT}, session=A_SESSION)
    b.call({"action": "note", "text": TEXT}, tainted=True, session=B_SESSION)
    carry(a, b, "a.jsonl")
    # On B the entry becomes an untrusted note (B holds its text untrusted): never identity.
    assert held(b) == [(A_SESSION, "private", True), (B_SESSION, "private", True)]
    assert TEXT not in b.home.memory_file("memory.md").read_text(encoding="utf-8")
    back = carry(b, a, "b.jsonl")
    # A's own entry stays, once, and is not added again as an untrusted note of its session.
    assert a.home.memory_file("memory.md").read_text(encoding="utf-8").count(TEXT) == 1
    assert held(a) == [(B_SESSION, "private", True)]
    assert any("already in memory.md" in x for x in back["lines"]), back["lines"]


def test_an_entry_claimed_untrusted_whose_text_is_in_its_file_adds_no_note(homes):
    a, _ = homes
    a.call({"action": "add", "file": "memory", "text": TEXT}, session=A_SESSION)
    path = a.data("export", format="jsonl")["path"]
    lines = open(path, encoding="utf-8").read().splitlines()
    (item,) = [json.loads(x) for x in lines[1:] if json.loads(x)["text"] == TEXT]
    item["provenance"]["untrusted"] = True
    (a.home.root / "backups" / "raised.jsonl").write_text(f"{lines[0]}\n{json.dumps(item)}\n")
    said = a.data("import", name="raised.jsonl")
    assert said["applied"] == 0 and "already in memory.md" in said["lines"][0], said
    assert held(a) == []
    assert a.home.memory_file("memory.md").read_text(encoding="utf-8").count(TEXT) == 1
