"""memoryd killed between the exchange of its write and the exchange back leaves the owner's save
under memoryd's temporary name beside memory.md or user.md: the next start keeps it (as
FILE.hand-edit-<time>, logged) rather than removing it with the crash's leftovers. A leftover that
holds what another place holds (the file now, the journal's last after, memoryd's intended write
whole or torn) is removed as before."""

import logging

import pytest

from memoryd.memory import entries, writeintent
from memoryd.server import remove_stale_temp_files
from tests.memoryd.store_helpers import fill, memory_path, new_store

FILES = [("memory", "memory.md"), ("user", "user.md")]


def _leftover(store, name: str, data: bytes):
    path = memory_path(store, name).with_name(f".{name}.0123456789ab.tmp")
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("arg,name", FILES)
def test_a_save_only_the_leftover_holds_is_kept(tmp_path, caplog, arg, name):
    store = new_store(tmp_path)
    fill(store, arg, ["base"])
    # memoryd was writing base + agent; the owner's save was exchanged out under its name.
    writeintent.intend(store.home, {"to": name, "before": ["base"], "after": ["base", "agent"]})
    memory_path(store, name).write_bytes(entries.file_bytes(["base", "agent"]))
    path = _leftover(store, name, b"base\n\xc2\xa7\nOWNER HAND EDIT\n")
    with caplog.at_level(logging.WARNING):
        remove_stale_temp_files(store.home)
    assert not path.exists()
    kept = list(store.home.memory.glob(f"{name}.hand-edit-*"))
    assert [p.read_bytes() for p in kept] == [b"base\n\xc2\xa7\nOWNER HAND EDIT\n"]
    assert kept[0].name in caplog.text and "kept" in caplog.text


@pytest.mark.parametrize(
    "held",
    [
        entries.file_bytes(["base"]),  # the old file, as the journal left it
        entries.file_bytes(["base", "agent"]),  # memoryd's new file
        entries.file_bytes(["base", "agent"])[:6],  # memoryd's new file, torn by the kill
        b"",
    ],
)
def test_a_leftover_another_place_holds_is_removed(tmp_path, held):
    store = new_store(tmp_path)
    fill(store, "memory", ["base"])
    writeintent.intend(
        store.home, {"to": "memory.md", "before": ["base"], "after": ["base", "agent"]}
    )
    path = _leftover(store, "memory.md", held)
    remove_stale_temp_files(store.home)
    assert not path.exists()
    assert not list(store.home.memory.glob("*.hand-edit-*"))


def test_a_leftover_of_the_file_now_is_removed_without_an_intent(tmp_path):
    store = new_store(tmp_path)
    fill(store, "memory", ["base"])
    memory_path(store, "memory.md").write_text("base\n§\nby hand, saved\n")
    path = _leftover(store, "memory.md", b"base\n\xc2\xa7\nby hand, saved\n")
    other = _leftover(store, "notes.md", b"a note")
    remove_stale_temp_files(store.home)
    assert not path.exists() and not other.exists()
    assert not list(store.home.memory.glob("*.hand-edit-*"))


def test_two_kept_in_the_same_second_keep_both(tmp_path):
    store = new_store(tmp_path)
    fill(store, "memory", ["base"])
    for n in range(2):
        path = memory_path(store, "memory.md").with_name(f".memory.md.00000000000{n}.tmp")
        path.write_text(f"owner save {n}\n")
    remove_stale_temp_files(store.home)
    kept = sorted(p.read_text() for p in store.home.memory.glob("memory.md.hand-edit-*"))
    assert kept == ["owner save 0\n", "owner save 1\n"]
