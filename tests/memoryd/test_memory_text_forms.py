"""The same memory written another way, on a store over real files: memory.md saved with lone CR
line ends, one entry in its two Unicode normal forms (NFC and NFD), a write whose lines end in
CRLF, and pending.jsonl or a journal month saved with a byte order mark."""

import logging
import unicodedata

import pytest

from memoryd.errors import EditRefused
from memoryd.memory import block, check, entries, notes
from tests.callargs import loose_call

from .store_helpers import (
    CLEAN,
    args,
    fill,
    journal_lines,
    last_line,
    memory_path,
    new_store,
    owner,
    snapshot,
)

TEA, LYON, CAT = "Owner likes tea.", "Owner lives in Lyon.", "Owner has a cat."
COMPOSED = "Owner lives in H\u00e0 N\u1ed9i, near H\u1ed3 G\u01b0\u01a1m."
DECOMPOSED = unicodedata.normalize("NFD", COMPOSED)
BOM = b"\xef\xbb\xbf"


def call(store, **fields) -> str:
    return store.call(*loose_call(args(**fields), **CLEAN))


def refused(store, **fields) -> str:
    before = snapshot(store)
    with pytest.raises(EditRefused) as e:
        call(store, **fields)
    assert snapshot(store) == before
    return str(e.value)


@pytest.mark.parametrize(
    "data",
    [
        f"{TEA}\r§\r{LYON}\r§\r{CAT}\r".encode(),  # classic Mac line ends
        f"\ufeff{TEA}\r§\r\n{LYON}\n§\r{CAT}".encode(),  # CR, CRLF and LF mixed
    ],
    ids=["CR", "mixed"],
)
def test_a_memory_file_saved_with_cr_line_ends_holds_the_entries_the_owner_wrote(tmp_path, data):
    store = new_store(tmp_path)
    fill(store, "memory", ["placeholder"])
    memory_path(store, "memory.md").write_bytes(data)
    assert f"# memory.md (58 of 2,200 characters)\n{TEA}\n§\n{LYON}\n§\n{CAT}\n\n" in store.block()
    store.detect_hand_edits()
    hand = last_line(store)
    assert (hand.action, hand.after) == ("hand-edit", [TEA, LYON, CAT])
    assert call(store, action="remove", file="memory", old=CAT).startswith("memory.md updated")
    assert memory_path(store, "memory.md").read_bytes() == f"{TEA}\n§\n{LYON}\n".encode()


def test_an_entry_in_the_other_normal_form_is_a_duplicate(tmp_path):
    store = new_store(tmp_path)
    assert DECOMPOSED != COMPOSED
    fill(store, "user", [COMPOSED])
    assert refused(store, action="add", file="user", text=DECOMPOSED) == (
        "refused: user.md already holds this entry"
    )
    other = new_store(tmp_path / "other")
    fill(other, "user", [DECOMPOSED])
    assert refused(other, action="add", file="user", text=COMPOSED) == (
        "refused: user.md already holds this entry"
    )
    fill(store, "user", [TEA])
    assert refused(store, action="replace", file="user", old=TEA, text=DECOMPOSED) == (
        "refused: user.md already holds this entry"
    )
    assert refused(store, action="replace", file="user", old=COMPOSED, text=DECOMPOSED) == (
        "refused: the new text is the same as old; nothing to change"
    )


def test_an_old_in_the_other_normal_form_names_the_entry_as_the_file_holds_it(tmp_path):
    store = new_store(tmp_path)
    fill(store, "user", [COMPOSED, TEA, LYON])
    call(store, action="replace", file="user", old=unicodedata.normalize("NFD", TEA), text=CAT)
    assert entries.parse(memory_path(store, "user.md").read_text()) == [COMPOSED, CAT, LYON]
    call(
        store,
        action="consolidate",
        file="user",
        entries=[
            {"old": DECOMPOSED, "keep": True},
            {"old": CAT, "drop": True},
            {"old": LYON, "keep": True},
        ],
    )
    held = memory_path(store, "user.md").read_text()
    assert entries.parse(held) == [COMPOSED, LYON]  # kept as written, not as old was sent
    call(store, action="remove", file="user", old=DECOMPOSED)
    assert entries.parse(memory_path(store, "user.md").read_text()) == [LYON]
    assert journal_lines(store)[-1]["before"] == [COMPOSED, LYON]
    dropped = notes.parse(memory_path(store, "notes.md").read_bytes())[-1]
    assert (dropped.kind, dropped.text) == ("dropped", COMPOSED)


def test_a_consolidate_naming_one_entry_in_both_forms_is_refused(tmp_path):
    store = new_store(tmp_path)
    fill(store, "user", [COMPOSED, TEA])
    said = refused(
        store,
        action="consolidate",
        file="user",
        entries=[
            {"old": COMPOSED, "keep": True},
            {"old": DECOMPOSED, "keep": True},
            {"old": TEA, "keep": True},
        ],
    )
    assert said.startswith("refused: consolidate names the entry") and "more than once" in said
    said = refused(
        store,
        action="consolidate",
        file="user",
        entries=[{"old": COMPOSED, "keep": True}, {"old": TEA, "keep": True}, {"text": DECOMPOSED}],
    )
    assert said.startswith("refused: consolidate would leave the entry")


def test_a_hand_edit_holding_both_forms_shows_the_entry_once_and_refuses_edits(tmp_path, caplog):
    store = new_store(tmp_path)
    fill(store, "memory", [TEA])
    memory_path(store, "memory.md").write_text(f"{COMPOSED}\n§\n{TEA}\n§\n{DECOMPOSED}\n")
    with caplog.at_level(logging.WARNING, logger="memoryd.memory.block"):
        text = store.block()
    assert f"{COMPOSED}\n§\n{TEA}\n\n# user.md" in text and DECOMPOSED not in text
    assert (
        f"memory.md: entry 3 left out of the memory block: {block.DUPLICATE_REASON}" in caplog.text
    )
    store.detect_hand_edits()  # journalled as the owner wrote it
    assert last_line(store).after == [COMPOSED, TEA, DECOMPOSED]
    said = refused(store, action="add", file="memory", text=CAT)
    assert (
        said.startswith("refused: memory.md holds the entry") and "twice (edited by hand)" in said
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"action": "note", "text": "Meeting notes:\r\n- budget approved\r\n- launch Thursday"},
        {"action": "add", "file": "memory", "text": "Launch plan:\r\nThursday 10:00 UTC"},
        {"action": "add", "file": "memory", "text": "Launch plan:\rThursday 10:00 UTC"},
    ],
    ids=["note CRLF", "add CRLF", "add CR"],
)
def test_a_write_with_cr_line_ends_is_refused_by_rule_1(tmp_path, fields):
    """Rule 1 refuses every control but newline and tab (spec 5), a CR too, with the rule's one
    fixed sentence; the same text with newline line ends is applied."""
    store = new_store(tmp_path)
    assert refused(store, **fields) == check.RULE_1
    call(store, **{**fields, "text": fields["text"].replace("\r\n", "\n").replace("\r", "\n")})


def test_pending_jsonl_saved_with_a_byte_order_mark_lists_and_accepts_its_first_write(tmp_path):
    store = new_store(tmp_path, review=True)
    fill(store, "user", [TEA, LYON])
    path = memory_path(store, "pending.jsonl")
    path.write_bytes(BOM + path.read_bytes().replace(b"\n", b"\r\n"))  # as Notepad saves it
    listed = owner(store, "pending")
    assert "p-2026-09-24-0001" in listed and "p-2026-09-24-0002" in listed
    assert "damaged" not in listed
    assert store.accept("p-2026-09-24-0001").startswith("accepted p-2026-09-24-0001 as edit")
    assert entries.parse(memory_path(store, "user.md").read_text()) == [TEA]
    fill(store, "user", [CAT])
    assert "p-2026-09-24-0003" in owner(store, "pending")  # the BOM's line id is not given again


def test_a_journal_month_saved_with_a_byte_order_mark_keeps_its_first_line(tmp_path):
    store = new_store(tmp_path)
    fill(store, "user", [TEA, LYON])
    [month] = store.home.edits.glob("*.jsonl")
    month.write_bytes(BOM + month.read_bytes())
    assert [line["id"] for line in journal_lines(store)] == ["2026-09-24-0001", "2026-09-24-0002"]
    fill(store, "user", [CAT])
    assert journal_lines(store)[-1]["id"] == "2026-09-24-0003"
