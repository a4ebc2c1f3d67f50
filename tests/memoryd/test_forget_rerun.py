"""A forget killed after it rewrote memory.md or notes.md and before it scrubbed the journal:
run again by the same id (as a forget stopped part way is finished), it takes what the first run
took, never the entry that moved into the number since, and scrubs the journal's copies rather
than answering "forgot" while they stand. Until it is finished, an id by number is refused with
nothing changed, since it may name another entry or note than it did before."""

import json

import pytest

from memoryd.data import erasing, forget, unfinished
from memoryd.errors import AdminRefused
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.test_forget_complete import called

ENTRIES = [
    "The build server is called anvil.",
    "Prefer metric units in answers.",
    "Backups run nightly at 02:30 to the NAS.",
    "Project Larkspur ships on the second Thursday.",
]
NOTES = ["The dentist is on Friday.", "The plumber comes on Tuesday.", "The bins go out Monday."]
# (the id forgotten, its text, an id by number the unfinished forget refuses)
CASES = {
    "entry": ("memory.md:3", ENTRIES[2], "memory.md:1"),
    "note": ("note:1", NOTES[1], "note:0"),
    "entry by text": (ENTRIES[2], ENTRIES[2], "memory.md:3"),
}


class Killed(Exception):
    """memoryd killed: nothing after it runs."""


def _killed(*_args, **_kwargs):
    raise Killed


def _journal(m: Memoryd) -> bytes:
    return b"".join(p.read_bytes() for p in m.store.journal.month_files())


def _files(m: Memoryd) -> dict[str, bytes]:
    names = ("memory.md", "notes.md")
    return {n: m.home.memory_file(n).read_bytes() for n in names} | {"journal": _journal(m)}


@pytest.mark.parametrize("case", list(CASES))
def test_a_forget_killed_part_way_is_finished_by_the_same_id_and_nothing_else(tmp_path, case):
    ref, text, other = CASES[case]
    m = Memoryd(tmp_path / "home")
    try:
        for entry in ENTRIES:
            m.call({"action": "add", "file": "memory", "text": entry})
        for note in NOTES:
            m.call({"action": "note", "text": note})
        searched = json.loads(m.admin("search", {"query": "plumber", "json": True}))
        assert "note:1" in [h["ref"] for h in searched["hits"]]
        real = erasing.scrub_everywhere
        erasing.scrub_everywhere = _killed  # dies after the files, before the journal
        try:
            with pytest.raises(Killed):
                m.admin("forget", {"id": ref})
        finally:
            erasing.scrub_everywhere = real
    finally:
        m.close()
    m = Memoryd(tmp_path / "home")
    try:
        assert text.encode() in _journal(m)  # the kill left the journal's copies
        before = _files(m)
        with pytest.raises(AdminRefused, match="stopped part way is not finished"):
            m.admin("forget", {"id": other})
        assert _files(m) == before

        said = json.loads(m.admin("forget", {"id": ref}))
        assert "forgot" in said["message"]
        assert text.encode() not in _journal(m)
        assert all(e in m.home.memory_file("memory.md").read_text() for e in ENTRIES if e != text)
        assert all(n in m.home.memory_file("notes.md").read_text() for n in NOTES if n != text)
        assert text not in m.home.memory_file("memory.md").read_text() + m.recall(text)
        assert not unfinished.path_of(m.home).exists()
        m.admin("forget", {"id": other})  # numbers are taken again once it is finished
    finally:
        m.close()


def test_a_forget_refused_before_its_first_write_leaves_no_record(tmp_path):
    m = Memoryd(tmp_path / "home")
    try:
        m.call({"action": "add", "file": "memory", "text": ENTRIES[0]})
        with pytest.raises(AdminRefused, match="no longer names what you were shown"):
            forget.run(m.service, "memory.md:1", check="not what was shown")
        assert not unfinished.path_of(m.home).exists()
        m.admin("forget", {"id": "memory.md:1"})
        assert not unfinished.path_of(m.home).exists()
    finally:
        m.close()


@pytest.mark.parametrize("command", ["restore", "import"])
def test_a_restore_or_import_waits_for_a_forget_stopped_part_way(tmp_path, command):
    """The text a stopped forget took may not be listed as forgotten yet: a restore of an older
    backup or an import of an older export would bring it back unseen, so both are refused, with
    nothing changed, until the forget is run again."""
    ref, text, _ = CASES["entry"]
    m = Memoryd(tmp_path / "home")
    try:
        for entry in ENTRIES:
            m.call({"action": "add", "file": "memory", "text": entry})
        made = m.data("backup" if command == "restore" else "export")
        real = erasing.scrub_everywhere
        erasing.scrub_everywhere = _killed
        try:
            with pytest.raises(Killed):
                m.admin("forget", {"id": ref})
        finally:
            erasing.scrub_everywhere = real
        name = "older.tar.gz" if command == "restore" else "older.jsonl"
        (m.home.root / "backups" / name).write_bytes(open(made["path"], "rb").read())
        before = _files(m)
        arg = {"name": name, "replace": True} if command == "restore" else {"name": name}
        done = "restored" if command == "restore" else "imported"
        with pytest.raises(AdminRefused, match=f"stopped part way; nothing was {done}: run"):
            m.admin(command, arg)
        assert _files(m) == before and text not in m.home.memory_file("memory.md").read_text()
        assert "forgot" in json.loads(m.admin("forget", {"id": ref}))["message"]
        m.admin(command, arg)
        assert text not in m.home.memory_file("memory.md").read_text()
    finally:
        m.close()


def test_until_a_forget_killed_part_way_is_finished_nothing_it_took_is_recalled(tmp_path):
    text = "The plumber comes on Tuesday at nine."
    m = Memoryd(tmp_path / "home")
    try:
        args = {"action": "note", "text": text}
        m.call(args, session="monday")
        called(m, "monday", "memory", args)  # the session record of the call that wrote it
        assert text in m.recall("plumber tuesday")
        # dies after notes.md lost the note, before the journal or forgotten.jsonl lists a key
        m.store.journal.append = _killed
        with pytest.raises(Killed):
            m.admin("forget", {"id": "note:0"})
    finally:
        m.close()
    m = Memoryd(tmp_path / "home")
    try:
        assert text not in m.home.memory_file("notes.md").read_text()
        assert text not in m.recall("plumber tuesday")
        said = json.loads(m.admin("search", {"query": "plumber", "json": True}))
        assert all(text not in json.dumps(h) for h in said["hits"])
        stats = m.admin("stats", {"days": 30})
        assert "stopped part way; its text may still be in notes.md, the journal" in stats
        assert "or an export: run bxctl memory forget 'note:0' again to finish it" in stats
        m.admin("forget", {"id": "note:0"})
        assert text not in m.recall("plumber tuesday")
        assert "stopped part way" not in m.admin("stats", {"days": 30})
    finally:
        m.close()
