"""An export edited to claim trusted, with its edit id blanked (a value the format allows) or
changed, never brings a text this home recorded as untrusted into memory.md, user.md or a trusted
note: the item is held to the notes of notes.md with its text, to every journal line that wrote
it, and (its edit being no write of it here) to the journal's label of the session it names. Each
source is checked alone, the others left out of the home, and the item's line names it."""

import json

import pytest

from memoryd.memory import notes
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import TAINTED, Clock

TEXT = "The owner's bank PIN hint is 4471."
ELSEWHERE = "mm-elsewhere01"  # a session of no home here


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home", clock=Clock())
    yield m
    m.close()


def exported(m: Memoryd) -> list[dict]:
    path = m.data("export", format="jsonl")["path"]
    return [json.loads(line) for line in open(path, encoding="utf-8").read().splitlines()]


def hand_in(m: Memoryd, items: list[dict], dry_run: bool = False) -> dict:
    head = exported(m)[0]
    data = "".join(json.dumps(x) + "\n" for x in [head, *items])
    (m.home.root / "backups" / "edited.jsonl").write_text(data)
    return m.data("import", name="edited.jsonl", dry_run=dry_run)


def entry(text: str = TEXT, session: str = TAINTED["session"], file: str = "memory.md") -> dict:
    prov = {
        "file": file,
        "session": session,
        "edit": None,
        "time": "2026-09-24T21:05Z",
        "class": "private",
        "untrusted": False,
    }
    return {"kind": "entry", "file": file, "text": text, "provenance": prov}


def labels(m: Memoryd, text: str = TEXT) -> list[tuple[str, str, bool]]:
    data = m.home.memory_file("notes.md").read_bytes()
    return [(n.kind, n.klass, n.untrusted) for n in notes.parse(data) if n.text == text]


def in_identity(m: Memoryd, text: str = TEXT) -> bool:
    return any(
        text in m.home.memory_file(f).read_text(encoding="utf-8") for f in ("memory.md", "user.md")
    )


def test_an_untrusted_note_with_its_edit_blanked_stays_an_untrusted_note(md):
    assert "untrusted" in md.call({"action": "add", "file": "memory", "text": TEXT}, tainted=True)
    (item,) = [i for i in exported(md)[1:] if i["text"] == TEXT]
    assert item["provenance"]["untrusted"] is True
    for file in ("memory.md", "user.md"):
        edited = entry(file=file)
        edited["provenance"]["time"] = item["provenance"]["time"]
        for dry_run in (True, False):
            (said,) = hand_in(md, [edited], dry_run=dry_run)["lines"]
            assert "its provenance claims trusted, but this home's notes.md holds" in said, said
            assert "added to" not in said, said
    assert not in_identity(md)
    assert TEXT not in md.admin("block", {})
    assert labels(md) == [("noted", "private", True)]  # the note already there, once


def test_an_untrusted_note_edited_to_a_moved_entry_adds_no_trusted_note(md):
    md.call({"action": "note", "text": TEXT}, tainted=True)
    (item,) = [i for i in exported(md)[1:] if i["text"] == TEXT]
    for session in (TAINTED["session"], ELSEWHERE):
        prov = {**item["provenance"], "edit": None, "untrusted": False, "session": session}
        moved = {**item, "note": "moved", "source": "memory.md", "provenance": prov}
        (said,) = hand_in(md, [moved])["lines"]
        assert "claims trusted" in said and "as untrusted" in said, said
    assert all(untrusted for _, _, untrusted in labels(md)), labels(md)
    assert ("moved", "private", False) not in labels(md)
    assert "memory-tainted" in md.recall("bank PIN hint")
    assert "identity" not in md.recall("bank PIN hint")


def test_a_note_of_notes_md_alone_holds_the_text_untrusted(md):
    # notes.md holds the text as untrusted and the journal knows nothing of it (the journal of
    # another month, lost): the header is the record.
    block = notes.noted(TEXT, Clock()(), "mm-handnote01", "private", True)
    with open(md.home.memory_file("notes.md"), "a", encoding="utf-8") as f:
        f.write(block)
    (said,) = hand_in(md, [entry(session=ELSEWHERE)])["lines"]
    assert "this home's notes.md holds that text from session mm-handnote01 as untrusted" in said
    assert not in_identity(md)


def test_a_journal_write_alone_holds_the_text_untrusted(md):
    md.call({"action": "note", "text": TEXT}, tainted=True)
    path = md.home.memory_file("notes.md")
    # The header edited by hand to say trusted: the journal's line still says untrusted.
    path.write_text(path.read_text(encoding="utf-8").replace(" · untrusted", ""), "utf-8")
    assert labels(md) == [("noted", "private", False)]
    (said,) = hand_in(md, [entry(session=ELSEWHERE)])["lines"]
    assert "this home's journal records edit" in said and "as untrusted" in said, said
    assert not in_identity(md)
    assert ("noted", "private", True) in labels(md)


def test_a_new_text_named_as_this_homes_untrusted_session_is_held_to_its_label(md):
    md.call({"action": "note", "text": "Something the page said."}, tainted=True)
    (said,) = hand_in(md, [entry(text="A text this home never wrote.")])["lines"]
    assert f"this home's journal records session {TAINTED['session']} as untrusted" in said
    assert not in_identity(md, "A text this home never wrote.")


def test_a_clean_text_of_another_home_is_imported_as_it_claims(md):
    md.call({"action": "note", "text": TEXT}, tainted=True)
    (said,) = hand_in(md, [entry(text="The shed key is under the pot.", session=ELSEWHERE)])[
        "lines"
    ]
    assert "added to memory.md" in said and "claims" not in said, said
    assert in_identity(md, "The shed key is under the pot.")


def test_a_clean_entry_with_its_edit_kept_is_not_held_to_its_sessions_later_label(md):
    # The session wrote the entry clean, then read untrusted content: the write's own journal
    # line is the record of that text, and it was trusted.
    md.call({"action": "add", "file": "memory", "text": TEXT}, session=TAINTED["session"])
    md.call({"action": "note", "text": "Later, from the page."}, tainted=True)
    (item,) = [i for i in exported(md)[1:] if i["text"] == TEXT]
    assert item["provenance"]["edit"] is not None
    path = md.home.memory_file("memory.md")
    path.write_text("", "utf-8")  # the owner emptied it by hand
    (said,) = hand_in(md, [item])["lines"]
    assert "added to memory.md" in said and "claims" not in said, said
