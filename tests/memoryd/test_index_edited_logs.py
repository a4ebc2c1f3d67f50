"""A hand edit anywhere in notes.md, or a session log that is another file now, is read again from
its start, however long the file and however far back the edit: a redaction that keeps the size is
no longer recalled, after a write or a restart. memoryd's own append still costs only what it
added, and an index written before the file read was kept trusts its tail hash as before."""

import datetime as dt
import logging
import os
import sqlite3

import pytest

from memoryd.home import Home, ensure_dir
from memoryd.index import indexer
from memoryd.index.index import Index
from memoryd.memory import notes
from tests.memoryd.test_modes_context import user
from tests.memoryd.test_reindex import append
from tests.recalling import recall_on

WHEN = dt.datetime(2026, 12, 1, 10, 0, tzinfo=dt.UTC)
SECRET = "Dentist phone is 555-867-5309, ask for Quillon."
FILLER = ("lorem ipsum dolor sit amet " * 40)[:990]


def _note(text: str) -> str:
    return notes.noted(text, WHEN, "mm-s", "private", False)


def _write(path, text: str, mode: str = "w") -> None:
    with open(path, mode, encoding="utf-8") as f:
        f.write(text)


def _long_notes(home: Home) -> None:
    """notes.md with the secret first and well over NOTES_WINDOW after it."""
    ensure_dir(home.memory)
    text = _note(SECRET) + "".join(_note(f"filler {n} {FILLER}") for n in range(75))
    assert len(text.encode()) > indexer.NOTES_WINDOW + 4096
    _write(home.memory_file("notes.md"), text)


def _in_place(path) -> None:
    """The phone number overwritten with as many X's, in the same file."""
    with open(path, "r+b") as f:
        at = f.read().index(b"555-867-5309")
        f.seek(at)
        f.write(b"XXX-XXX-XXXX")


def _saved(path) -> None:
    """The same redaction as an editor saves it: another file renamed over it."""
    tmp = path.with_name(path.name + ".edit")
    tmp.write_bytes(path.read_bytes().replace(b"555-867-5309", b"XXX-XXX-XXXX"))
    os.replace(tmp, path)


def _recall(index: Index, query: str) -> str:
    return recall_on(index, query, 10, session="s-test").text


def _opened(home: Home) -> Index:
    index = Index(home)
    index.open()
    return index


@pytest.mark.parametrize("edit", [_in_place, _saved])
@pytest.mark.parametrize("then", ["restart", "own write", "recall's catch-up"])
def test_a_same_length_redaction_far_back_in_notes_md_is_read_again(tmp_path, edit, then):
    home = Home(tmp_path / "home")
    _long_notes(home)
    path = home.memory_file("notes.md")
    index = _opened(home)
    try:
        index.catch_up_notes()
        assert "555-867-5309" in _recall(index, "Quillon")
        edit(path)
        if then == "restart":
            index.close()
            index = _opened(home)
            index.catch_up_notes()
        elif then == "own write":  # memoryd appends a note after the owner's edit
            before = index.notes_file()
            _write(path, _note("a later note"), "a")
            index.catch_up_notes(before)
        else:
            index.catch_up_notes()
        out = _recall(index, "Quillon")
        assert "555-867-5309" not in out and "XXX-XXX-XXXX" in out
        assert index.notes_seen.renumbered == 1  # read again from its start
    finally:
        index.close()


def _rowids(home: Home, where: str) -> list[int]:
    conn = sqlite3.connect(home.index_db)
    try:
        return [r[0] for r in conn.execute(f"SELECT rowid FROM sources WHERE {where}")]
    finally:
        conn.close()


def test_memoryds_own_append_is_read_from_where_the_index_stopped(tmp_path, caplog):
    home = Home(tmp_path / "home")
    _long_notes(home)
    path = home.memory_file("notes.md")
    index = _opened(home)
    try:
        index.catch_up_notes()
        held = _rowids(home, "kind = 'noted'")
        with caplog.at_level(logging.WARNING, logger="memoryd"):
            for n in range(3):
                before = index.notes_file()
                _write(path, _note(f"own note {n}"), "a")
                assert index.catch_up_notes(before) == 1
            assert index.catch_up_notes() == 0  # nothing changed since
        assert _rowids(home, "kind = 'noted'")[: len(held)] == held
        assert index.notes_seen.renumbered == 0
        assert not [r for r in caplog.records if "indexing it again" in r.getMessage()]
        # The owner's own append keeps every byte the index read, as the digest of them shows:
        # read on too, the numbers kept (an edit before the offset is read again: below).
        _write(path, _note("the owner's note"), "a")
        assert index.catch_up_notes() == 1
        assert _rowids(home, "kind = 'noted'")[: len(held)] == held
        assert index.notes_seen.renumbered == 0
    finally:
        index.close()


def test_an_edit_before_memoryds_own_write_is_not_taken_for_it(tmp_path):
    home = Home(tmp_path / "home")
    _long_notes(home)
    path = home.memory_file("notes.md")
    index = _opened(home)
    try:
        index.catch_up_notes()
        _in_place(path)
        before = index.notes_file()  # taken after the owner's edit
        _write(path, _note("own note"), "a")
        index.catch_up_notes(before)
        assert "555-867-5309" not in _recall(index, "Quillon")
    finally:
        index.close()


def _as_older(home: Home) -> None:
    """The offsets as an index written before the file read was kept holds them."""
    conn = sqlite3.connect(home.index_db)
    try:
        conn.execute("UPDATE offsets SET tail = substr(tail, 1, 64)")
        conn.commit()
    finally:
        conn.close()


def test_notes_state_without_the_file_read_trusts_the_tail_hash(tmp_path):
    home = Home(tmp_path / "home")
    _long_notes(home)
    path = home.memory_file("notes.md")
    index = _opened(home)
    index.catch_up_notes()
    index.close()
    _as_older(home)
    held = _rowids(home, "kind = 'noted'")
    _write(path, _note("appended while stopped"), "a")
    index = _opened(home)
    try:
        assert index.catch_up_notes() == 1  # as before: the tail hash holds
        assert _rowids(home, "kind = 'noted'")[: len(held)] == held
        _in_place(path)  # and from now on the file read is known
        index.catch_up_notes()
        assert "555-867-5309" not in _recall(index, "Quillon")
    finally:
        index.close()


OLD = "the first turn: my locker code is 4417"
NEW = "the first turn: my locker code is XXXX"


def _session(home: Home) -> None:
    append(home, "mm-a", [user("2026-12-01T10:00:00Z", OLD)])
    append(home, "mm-a", [user("2026-12-01T10:01:00Z", f"turn {n} {FILLER}") for n in range(3)])


def _sed_i(home: Home) -> None:
    """As sed -i does: the log written again to another file, renamed over it."""
    path = home.session_log("mm-a")
    tmp = path.with_name("sedXYZ")
    tmp.write_bytes(path.read_bytes().replace(OLD.encode(), NEW.encode()))
    os.replace(tmp, path)


def test_a_session_log_that_is_another_file_is_indexed_again(tmp_path, caplog):
    home = Home(tmp_path / "home")
    _session(home)
    index = _opened(home)
    try:
        index.catch_up_all()
        assert "4417" in _recall(index, "locker code")
        _sed_i(home)
        with caplog.at_level(logging.WARNING, logger="memoryd"):
            index.catch_up_all()
        out = _recall(index, "locker code")
        assert "4417" not in out and "XXXX" in out
        assert len(_rowids(home, "kind = 'session'")) == 4
        assert [r for r in caplog.records if "another file than was read" in r.getMessage()]
    finally:
        index.close()


def test_a_session_log_that_only_grew_is_read_from_its_offset(tmp_path):
    home = Home(tmp_path / "home")
    _session(home)
    index = _opened(home)
    try:
        index.catch_up_all()
        held = _rowids(home, "kind = 'session'")
        append(home, "mm-a", [user("2026-12-01T10:02:00Z", "one more turn")])
        assert index.catch_up_session("mm-a") == 1
        assert _rowids(home, "kind = 'session'")[: len(held)] == held
    finally:
        index.close()


def test_session_state_without_the_file_read_trusts_the_tail_hash(tmp_path):
    home = Home(tmp_path / "home")
    _session(home)
    index = _opened(home)
    index.catch_up_all()
    index.close()
    _as_older(home)
    held = _rowids(home, "kind = 'session'")
    index = _opened(home)
    try:
        assert index.catch_up_session("mm-a") == 0
        assert _rowids(home, "kind = 'session'") == held
        append(home, "mm-a", [user("2026-12-01T10:02:00Z", "one more turn")])
        assert index.catch_up_session("mm-a") == 1  # the file read is known from here on
        _sed_i(home)
        index.catch_up_session("mm-a")
        assert "4417" not in _recall(index, "locker code")
    finally:
        index.close()
