"""What a write's text holds at its edges, on a store over real files.

Trimming takes Unicode White_Space only (proto.trim), so a control character at the start or end
of a text reaches the check and is refused under rule 1, never cut off and applied. Matching of
old stays exact; an old that differs from an entry only in its white space is told so, with the
difference shown, and an old that matches nothing is quoted with its white space visible. A note
is counted as it is stored, trimmed, by the parse and by memoryd alike.
"""

import pytest

from memoryd.errors import EditRefused
from memoryd.memory import check, entries
from tests.callargs import loose_call

from .store_helpers import CLEAN, TAINTED, args, fill, memory_path, new_store, snapshot

SEPARATORS = "\x1c\x1d\x1e\x1f"


def refused(store, call: str, state=CLEAN) -> str:
    before = snapshot(store)
    with pytest.raises(EditRefused) as e:
        store.call(*loose_call(call, **state))
    assert snapshot(store) == before
    return str(e.value)


@pytest.mark.parametrize("control", SEPARATORS)
def test_a_control_character_at_an_edge_is_refused_in_every_action(tmp_path, control):
    store = new_store(tmp_path)
    fill(store, "user", ["Owner likes tea."])
    for text in (f"{control}Owner has a cat.", f"Owner has a cat.{control}\n"):
        calls = [
            (args(action="add", file="user", text=text), CLEAN),
            (args(action="replace", file="user", old="Owner likes tea.", text=text), CLEAN),
            (
                args(
                    action="consolidate",
                    file="user",
                    entries=[{"old": "Owner likes tea.", "keep": True}, {"text": text}],
                ),
                CLEAN,
            ),
            (args(action="note", text=text), CLEAN),
            (args(action="add", file="memory", text=text), TAINTED),  # becomes a note
        ]
        for call, state in calls:
            assert refused(store, call, state) == check.RULE_1, call


def test_a_hand_edited_line_of_section_sign_and_a_control_is_no_separator(tmp_path):
    store = new_store(tmp_path)
    memory_path(store, "user.md").write_bytes("one\n§\x1f\ntwo\n§\nthree\n".encode())
    assert entries.parse(memory_path(store, "user.md").read_text()) == ["one\n§\x1f\ntwo", "three"]


def test_an_old_with_a_final_newline_is_refused_naming_the_newline(tmp_path):
    store = new_store(tmp_path)
    fill(store, "user", ["Owner likes tea."])
    call = args(action="replace", file="user", old="Owner likes tea.\n", text="Owner likes milk.")
    assert refused(store, call) == (
        'refused: old differs from the entry "Owner likes tea." of user.md only in its white '
        'space (old ends with "\\n", the entry does not); old must be the entry exactly as the '
        "file holds it"
    )


def test_an_old_with_a_line_break_written_as_a_space_is_refused_naming_both(tmp_path):
    store = new_store(tmp_path)
    fill(store, "user", ["Owner lives in Lyon;\nworks from home."])
    sentence = refused(
        store, args(action="remove", file="user", old="Owner lives in Lyon; works from home.")
    )
    assert sentence == (
        'refused: old differs from the entry "Owner lives in Lyon;\\nworks from home." of user.md '
        'only in its white space (after "Lyon;" old has " " where the entry has "\\n"); old must '
        "be the entry exactly as the file holds it"
    )


def test_a_consolidate_old_differing_in_white_space_is_told_so(tmp_path):
    store = new_store(tmp_path)
    fill(store, "memory", ["a b", "c"])
    call = args(
        action="consolidate",
        file="memory",
        entries=[{"old": " a\u00a0b", "keep": True}, {"old": "c", "keep": True}],
    )
    assert refused(store, call) == (
        'refused: old differs from the entry "a b" of memory.md only in its white space (old '
        'starts with " ", the entry does not; after "a" old has "\\u{00A0}" where the entry has '
        '" "); old must be the entry exactly as the file holds it'
    )


def test_an_old_matching_nothing_is_quoted_with_its_white_space_visible(tmp_path):
    store = new_store(tmp_path)
    fill(store, "memory", ["Owner likes tea."])
    call = args(action="remove", file="memory", old="Owner likes\ttea\n\x1b[2J")
    assert refused(store, call) == (
        'refused: old "Owner likes\\ttea\\n\\x1b[2J" matches no entry of memory.md as it is now; '
        "the file may have changed since this session started"
    )


def test_an_exact_old_still_applies(tmp_path):
    store = new_store(tmp_path)
    fill(store, "user", ["Owner lives in Lyon;\nworks from home."])
    call = args(action="remove", file="user", old="Owner lives in Lyon;\nworks from home.")
    store.call(*loose_call(call, **CLEAN))
    assert memory_path(store, "user.md").read_bytes() == b""


def test_a_note_is_counted_as_stored_by_the_parse_and_by_memoryd(tmp_path):
    store = new_store(tmp_path)
    assert store.call(*loose_call(args(action="note", text="n" * 1_000 + "\n"), **CLEAN)) == "noted"
    assert memory_path(store, "notes.md").read_text().endswith("\n" + "n" * 1_000 + "\n")
    rule = "a note is 1 to 1,000 characters; this one is"
    assert refused(store, args(action="note", text="   ")).endswith(f"{rule} 0")
    assert refused(store, args(action="note", text=" " + "n" * 1_001)).endswith(f"{rule} 1,001")
    # an untrusted add becomes a note and is held to the same rule
    too_long = args(action="add", file="memory", text="m" * 1_001 + "\n")
    assert refused(store, too_long, TAINTED) == f"refused: {rule} 1,001"
