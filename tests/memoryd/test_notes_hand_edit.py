"""notes.md edited by hand while memoryd runs: recall and the owner's search answer from notes.md
as it is (the writer catches the index up first, at the cost of one stat when nothing changed),
and forget never takes a note number that may name another note than search showed."""

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from memoryd.errors import AdminRefused
from memoryd.writer import WRITE
from proto.client import RemoteError
from tests.callargs import loose_call

from .owner_data_harness import Memoryd
from .store_helpers import CLEAN
from .test_service import Running, memoryd  # noqa: F401  (the fixture)

QUOKKA = "The launch moved to Thursday quokka."
WOMBAT = "Buy flowers wombat for mum."
ALPACA = "Alpaca dentist on Monday."
ADDED = "§ noted 2026-09-20T14:02Z in session mm-byhand · private\nThe capybara spa is open late.\n"


def _write_notes(running, *texts: str) -> Path:
    assert running.service.caught_up.wait(30)  # the start's catch-up reads notes.md no more
    for n, text in enumerate(texts):
        assert running.call("memory", {"action": "note", "text": text}, call_id=f"n{n}").ok
    # Each note queues the catch-up of notes.md after its answer (notesafter.py): wait for the
    # writer to run it, so what a test counts next is its own doing, not the last note's.
    running.service._writer.submit(WRITE, lambda: None).result(timeout=30)
    return running.home / "memory" / "notes.md"


def _without(notes: Path, word: str) -> str:
    """notes.md's text without the note holding word (its header and its line)."""
    lines = notes.read_text().splitlines(True)
    at = next(i for i, line in enumerate(lines) if word in line)
    return "".join(lines[: at - 1] + lines[at + 1 :])


def _replace(notes: Path, text: str) -> None:
    """As an editor saves: a new file renamed over the old one."""
    tmp = notes.with_name("notes.md.edit")
    tmp.write_text(text)
    os.replace(tmp, notes)


def _in_place(notes: Path, text: str) -> None:
    """As an editor that writes over the same file does."""
    with open(notes, "r+") as f:
        f.truncate(0)
        f.write(text)


def _search(running, query: str) -> str:
    return running.admin("search", json.dumps({"query": query, "k": 10}))


def _recall(running, query: str) -> str:
    return running.call("recall", {"query": query}).output


@pytest.mark.parametrize("save", [_replace, _in_place])
@pytest.mark.parametrize("answer", [_recall, _search])
def test_a_note_removed_or_added_by_hand_is_recalled_as_notes_md_holds_it(memoryd, save, answer):  # noqa: F811
    notes = _write_notes(memoryd, QUOKKA, WOMBAT, ALPACA)
    assert QUOKKA in answer(memoryd, "quokka")
    save(notes, _without(notes, "quokka") + ADDED)
    assert QUOKKA not in answer(memoryd, "quokka")
    assert "capybara spa is open late" in answer(memoryd, "capybara")
    assert WOMBAT in answer(memoryd, "wombat")


def test_an_unchanged_notes_md_costs_a_recall_no_writer_job(memoryd):  # noqa: F811
    notes = _write_notes(memoryd, QUOKKA, WOMBAT)
    index = memoryd.service.index
    caught_up = index.catch_up_notes
    threads: list[str] = []

    def counted(*args) -> int:
        threads.append(threading.current_thread().name)
        return caught_up(*args)

    index.catch_up_notes = counted
    try:
        for _ in range(5):
            assert WOMBAT in _recall(memoryd, "wombat")
        assert threads == []
        _replace(notes, _without(notes, "quokka"))
        for _ in range(3):
            assert QUOKKA not in _recall(memoryd, "quokka")
        assert threads == ["memoryd-writer"]  # once, and on the writer, never on a reader
    finally:
        del index.catch_up_notes


def _forget(running, ref: str) -> str:
    return running.admin("forget", json.dumps({"id": ref}))


@pytest.mark.parametrize("recalled_between", [False, True])
def test_forget_refuses_a_note_number_search_printed_before_a_hand_edit(memoryd, recalled_between):  # noqa: F811
    notes = _write_notes(memoryd, QUOKKA, WOMBAT, ALPACA)
    assert "note:1" in _search(memoryd, "wombat")
    _replace(notes, _without(notes, "quokka"))  # the wombat note is note:0 now
    if recalled_between:  # the agent's recall catches the index up: note:1 is the alpaca's there
        assert ALPACA in _recall(memoryd, "alpaca")
    before = notes.read_bytes()
    with pytest.raises(RemoteError, match="since (the last|a) bxctl memory search") as refused:
        _forget(memoryd, "note:1")
    assert "\n" not in str(refused.value)
    assert notes.read_bytes() == before  # nothing was forgotten

    assert "note:0" in _search(memoryd, "wombat")  # the search caught the index up
    assert "forgot note:0" in _forget(memoryd, "note:0")
    left = notes.read_text()
    assert WOMBAT not in left and ALPACA in left
    assert ALPACA in _recall(memoryd, "alpaca")


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    for text in (QUOKKA, WOMBAT, ALPACA):
        m.call({"action": "note", "text": text})
    yield m
    m.close()


def test_forget_refuses_a_note_the_index_holds_another_text_for(md):
    """An edit notes.md's stat did not show: the index's text under the number still differs."""
    notes = md.home.memory / "notes.md"
    _replace(notes, _without(notes, "quokka"))
    md.index.notes_seen.done(md.index.notes_seen.look())  # as if the stat had not changed
    before = notes.read_bytes()
    with pytest.raises(AdminRefused, match="holds another note as note:1 than the index does"):
        md.admin("forget", {"id": "note:1"})
    assert notes.read_bytes() == before


def test_forget_by_a_current_note_number_still_forgets_it(md):
    md.admin("forget", {"id": "note:1"})
    left = (md.home.memory / "notes.md").read_text()
    assert WOMBAT not in left and QUOKKA in left and ALPACA in left


def test_a_note_number_searched_before_a_restore_is_refused_until_a_search(md):
    """A restore replaces notes.md whole: the numbers a search printed before it may name other
    notes in the restored file, and the catch-up after it must not make them good again."""
    archive = Path(md.data("backup")["path"])
    notes = md.home.memory / "notes.md"
    _replace(notes, _without(notes, "quokka"))
    md.index.catch_up_all()  # as the service does before a search
    assert "note:0" in md.admin("search", {"query": "wombat", "k": 10})  # the wombat note
    shutil.copy(archive, md.home.root / "backups" / "saved.tar.gz")
    md.data("restore", name="saved.tar.gz", replace=True)  # quokka is note:0 again
    md.index.catch_up_all()
    before = notes.read_bytes()
    with pytest.raises(AdminRefused, match="read again from its start.*search again"):
        md.admin("forget", {"id": "note:0"})
    assert notes.read_bytes() == before and QUOKKA in before.decode()
    md.admin("search", {"query": "wombat", "k": 10})
    md.admin("forget", {"id": "note:1"})
    left = notes.read_text()
    assert WOMBAT not in left and QUOKKA in left and ALPACA in left


@pytest.mark.parametrize("edited", [False, True])
@pytest.mark.parametrize("command", ["forget", "promote"])
def test_a_note_number_printed_before_a_restart_is_refused_until_a_search(
    memoryd,  # noqa: F811
    tmp_path,
    edited,
    command,
):
    """The numbers a search printed before memoryd started may name other notes now (an edit
    read again from its start in between): a note:N needs a search of this memoryd."""
    notes = _write_notes(memoryd, QUOKKA, WOMBAT, ALPACA)
    assert "note:1" in _search(memoryd, "wombat")
    if edited:  # the wombat note is note:0 now, and the index holds the alpaca's as note:1
        _replace(notes, _without(notes, "quokka"))
        assert ALPACA in _recall(memoryd, "alpaca")
    memoryd.stop()
    again = Running(memoryd.home, tmp_path / "memoryd.toml")
    try:
        assert again.service.caught_up.wait(30)
        arg = {"id": "note:1"} if command == "forget" else {"ref": "note:1", "file": "user"}
        before = notes.read_bytes(), (memoryd.home / "memory" / "user.md").read_bytes()
        with pytest.raises(RemoteError, match="since memoryd started.*search again") as refused:
            again.admin(command, json.dumps(arg))
        assert "\n" not in str(refused.value)
        assert (notes.read_bytes(), (memoryd.home / "memory" / "user.md").read_bytes()) == before

        wanted = ALPACA if edited else WOMBAT
        assert "note:1" in _search(again, wanted.split()[0])
        again.admin(command, json.dumps(arg))
        if command == "forget":
            assert wanted not in notes.read_text()
        else:
            assert wanted in (memoryd.home / "memory" / "user.md").read_text()
    finally:
        again.stop()


def _appended_by_memoryd(md, notes: Path) -> None:
    """memoryd's own append, before the writer indexes it (what a reader may see meanwhile)."""
    parsed, caller = loose_call(json.dumps({"action": "note", "text": "Zebra note."}), **CLEAN)
    md.store.call(parsed, caller)


def _appended_by_hand(md, notes: Path) -> None:
    with open(notes, "a") as f:
        f.write(ADDED)


def _saved_with_a_note_added(md, notes: Path) -> None:
    _replace(notes, notes.read_text() + ADDED)  # another file, though it only grew


def _removed_in_place_and_grown(md, notes: Path) -> None:
    _in_place(notes, _without(notes, "quokka") + ADDED + ADDED)


def _word_changed_in_place_and_grown(md, notes: Path) -> None:
    with open(notes, "r+b") as f:
        at = f.read().index(b"quokka")
        f.seek(at)
        f.write(b"QUOKKA")
        f.seek(0, os.SEEK_END)
        f.write(ADDED.encode())


@pytest.mark.parametrize(
    "change, taken",
    [
        (_appended_by_memoryd, True),
        (_appended_by_hand, True),
        (_saved_with_a_note_added, False),
        (_removed_in_place_and_grown, False),
        (_word_changed_in_place_and_grown, False),
    ],
)
def test_notes_md_that_only_grew_since_the_index_read_it_keeps_its_numbers(md, change, taken):
    notes = md.home.memory / "notes.md"
    assert "note:1" in md.admin("search", {"query": "wombat", "k": 10})
    change(md, notes)
    assert md.index.notes_seen.behind(1) is not taken
    before = notes.read_bytes()
    if taken:
        assert "forgot note:1" in md.admin("forget", {"id": "note:1"})
        left = notes.read_text()
        assert WOMBAT not in left and QUOKKA in left and ALPACA in left
        return
    with pytest.raises(AdminRefused, match="since (the last|a) bxctl memory search"):
        md.admin("forget", {"id": "note:1"})
    assert notes.read_bytes() == before


def test_stats_prints_note_numbers_that_forget_takes_after_a_restart(memoryd, tmp_path):  # noqa: F811
    """bxctl memory stats prints a moved note's note:N as search prints a hit's: after a restart
    the owner may forget it by that number without a search first."""
    notes = _write_notes(memoryd, QUOKKA)
    with open(notes, "a") as f:
        f.write(f"§ moved 2026-09-24T20:14Z from memory.md in session mm-byhand\n{WOMBAT}\n")
    memoryd.stop()
    again = Running(memoryd.home, tmp_path / "memoryd.toml")
    try:
        assert again.service.caught_up.wait(30)
        with pytest.raises(RemoteError, match="search or stats has printed"):
            again.admin("forget", json.dumps({"id": "note:1"}))
        shown = again.admin("stats", "{}")
        assert f"note:1 from memory.md: {WOMBAT}" in shown
        again.admin("forget", json.dumps({"id": "note:1"}))
        assert WOMBAT not in notes.read_text() and QUOKKA in notes.read_text()
    finally:
        again.stop()


def test_only_a_number_printed_since_the_last_renumbering_is_taken(memoryd, tmp_path):  # noqa: F811
    """A search or stats makes current only the note numbers it printed: after a hand edit and
    a restart, a stats that printed no note, or a search that printed another, leaves note:1
    refused, and never erases the note that moved into its place."""
    notes = _write_notes(memoryd, QUOKKA, WOMBAT, ALPACA)
    assert "note:1" in _search(memoryd, "wombat")
    _replace(notes, _without(notes, "quokka"))  # the alpaca note is note:1 now
    memoryd.stop()
    again = Running(memoryd.home, tmp_path / "memoryd.toml")
    try:
        assert again.service.caught_up.wait(30)
        assert "moved notes (0)" in again.admin("stats", "{}")
        assert "note:0" in _search(again, "wombat") and "note:1" not in _search(again, "wombat")
        with pytest.raises(RemoteError, match="has printed note:1 since memoryd started"):
            again.admin("forget", json.dumps({"id": "note:1"}))
        assert ALPACA in notes.read_text()
    finally:
        again.stop()


def test_stats_after_a_hand_edit_prints_numbers_forget_takes(memoryd):  # noqa: F811
    """stats catches the index up with notes.md before it prints note numbers, as search does,
    so a number it prints after a hand edit names the note it showed."""
    notes = _write_notes(memoryd, QUOKKA)
    with open(notes, "a") as f:
        for text in (WOMBAT, ALPACA):
            f.write(f"§ moved 2026-09-24T20:14Z from memory.md in session mm-byhand\n{text}\n")
    _replace(notes, _without(notes, "quokka"))  # by hand: the alpaca note is note:1 now
    shown = memoryd.admin("stats", "{}")
    assert f"note:1 from memory.md: {ALPACA}" in shown
    memoryd.admin("forget", json.dumps({"id": "note:1"}))
    assert ALPACA not in notes.read_text() and WOMBAT in notes.read_text()


def test_a_header_turned_to_text_far_back_in_place_plus_an_append_is_renumbered(tmp_path):
    """The edit keeps notes.md's size and lies before the window of bytes hashed at the offset
    the index reached: only the digest of every byte before it tells that notes.md did not just
    grow, so note:1 (the wombat's in the search) would name the note after it."""
    m = Memoryd(tmp_path / "home")
    try:
        for text in (QUOKKA, WOMBAT):
            m.call({"action": "note", "text": text})
        for n in range(80):  # 80 KB of notes after them: past the 64 KiB window
            m.call({"action": "note", "text": f"filler {n} " + "x" * 990})
        notes = m.home.memory / "notes.md"
        assert "note:1" in m.admin("search", {"query": "wombat", "k": 10})
        with open(notes, "r+b") as f:
            data = f.read()
            assert len(data) - data.index(b"quokka") > 70_000
            f.seek(data.index("§ noted".encode()))
            f.write(b"S  noted")  # the same length: the first header is text now
            f.seek(0, os.SEEK_END)
            f.write(ADDED.encode())
        assert m.index.notes_seen.behind(1)
        before = notes.read_bytes()
        with pytest.raises(AdminRefused, match="since (the last|a) bxctl memory search"):
            m.admin("forget", {"id": "note:1"})
        assert notes.read_bytes() == before
    finally:
        m.close()
