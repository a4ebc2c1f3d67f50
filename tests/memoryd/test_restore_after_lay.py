"""restore --replace, after its files are laid: a step that follows (the journal's derived index
dropped, the rows of forgotten keys deleted, notes.md indexed again) that fails is said in the
answer, which says the files were restored; no row of a forgotten key can be recalled meanwhile.
A kill after the files are renamed into place loses none of the session keys the home had
forgotten: the next start finishes the restore with them listed. Real homes, a real backup, the
owner's commands; the errors are injected into the index's deletes, the journal index's removal
and lay.py's folder fsyncs."""

import errno
import json
import shutil
import sqlite3

import pytest

from memoryd.data import lay, layout, purge
from memoryd.errors import IndexDamaged
from memoryd.index import indexer
from memoryd.journal import forgotten, forgottenwrite
from memoryd.writer import WRITE
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.restore_lines import without_restore_lines

STAMP = "2026-09-20T14:02Z"


def _memory(m: Memoryd) -> dict[str, bytes]:
    return {name: p.read_bytes() for name, p in layout.memory_files(m.home)}


def _homes(tmp_path, forgotten_in_archive: bytes) -> tuple[Memoryd, dict[str, bytes]]:
    """Home b, holding memory and session records, handed a backup made in home a whose
    forgotten.jsonl holds forgotten_in_archive; the backup's memory files."""
    a = Memoryd(tmp_path / "a")
    try:
        a.call({"action": "add", "file": "memory", "text": "Fact from the backup."})
        a.call({"action": "note", "text": "Bluefinch note from the backup."})
        forgotten.path(a.home).write_bytes(forgotten_in_archive)
        made = a.data("backup")
        restored = _memory(a)
    finally:
        a.close()
    b = Memoryd(tmp_path / "b")
    b.call({"action": "add", "file": "memory", "text": "Old precious fact."})
    shutil.copy(made["path"], b.home.root / "backups" / "a.tar.gz")
    return b, restored


def _line(key: str) -> bytes:
    return b'{"key": "%s", "time": "%s", "edit": "e1"}' % (key.encode(), STAMP.encode())


def _reindex(m: Memoryd) -> None:
    m.service._writer.submit(WRITE, m.index.reindex).result()


class Broken:
    """A step after the files are laid fails: purge's delete of a forgotten session record, the
    delete of notes.md's rows before it is indexed again (both with SQLite's disk I/O error), or
    the removal of the journal's derived index (EIO)."""

    def __init__(self, monkeypatch, m: Memoryd, step: str):
        self.failed = 0
        if step == "journal index":

            def discard():
                self.failed += 1
                raise OSError(errno.EIO, "Input/output error")

            monkeypatch.setattr(m.store.journal_index, "discard", discard)
            return
        real = indexer._delete_rows

        def delete_rows(conn, where, params):
            if ("kind = 'session'" in where) == (step == "purge"):
                self.failed += 1
                raise sqlite3.OperationalError("disk I/O error")
            return real(conn, where, params)

        monkeypatch.setattr(indexer, "_delete_rows", delete_rows)


@pytest.mark.parametrize(
    ("step", "said"),
    [
        ("purge", "but the index could not be brought up to date (disk I/O error)"),
        ("notes", "but the index could not be brought up to date (disk I/O error)"),
        ("journal index", "could not be removed (Input/output error): remove it"),
    ],
)
def test_a_step_after_the_lay_that_fails_is_said_after_the_files_restored(
    tmp_path, monkeypatch, step, said
):
    b, restored = _homes(tmp_path, _line("session:s-old:0") + b"\n")
    try:
        b.say("s-old", "Zanzibar secret words.", "An otter reply.")
        assert "Zanzibar" in b.recall("zanzibar")
        broken = Broken(monkeypatch, b, step)
        out = b.data("restore", name="a.tar.gz", replace=True)
        assert broken.failed
        assert out["restored"] == "a.tar.gz" and out["before"]
        assert out["message"].startswith("restored a.tar.gz") and said in out["message"]
        assert without_restore_lines(_memory(b)) == restored
        assert b.service.unfinished is None
        monkeypatch.undo()
        if step == "journal index":
            assert "the index was rebuilt from notes.md and sessions/" in out["message"]
            assert "Zanzibar" not in b.recall("zanzibar")
        else:
            assert "recall is refused until it is rebuilt: run bxctl reindex" in out["message"]
            with pytest.raises(IndexDamaged, match="bxctl reindex"):
                b.recall("zanzibar")
            if step == "notes":  # the owner runs bxctl reindex (after purge: restarts instead)
                _reindex(b)
        if step != "purge":
            assert "Zanzibar" not in b.recall("zanzibar")
            assert "Bluefinch note" in b.recall("bluefinch")
        b.call({"action": "add", "file": "memory", "text": "Written after the restore."})
        assert b"Old precious fact." not in b.home.memory_file("memory.md").read_bytes()
    finally:
        b.close()
    again = Memoryd(tmp_path / "b")  # a restart builds the index again without forgotten rows
    try:
        assert "Zanzibar" not in again.recall("zanzibar")
        assert "otter reply" in again.recall("otter")
        assert "Bluefinch note" in again.recall("bluefinch")
    finally:
        again.close()


def test_an_index_that_can_be_neither_brought_up_to_date_nor_removed_refuses_memory(
    tmp_path, monkeypatch
):
    b, restored = _homes(tmp_path, _line("session:s-old:0") + b"\n")
    try:
        b.say("s-old", "Zanzibar secret words.")
        Broken(monkeypatch, b, "purge")

        def remove_database(path):
            raise OSError(errno.EIO, "Input/output error")

        monkeypatch.setattr(purge, "remove_database", remove_database)
        out = b.data("restore", name="a.tar.gz", replace=True)
        assert without_restore_lines(_memory(b)) == restored
        assert "nor removed (Input/output error), so memoryd refuses memory" in out["message"]
        assert f"remove {b.index.path}, then start it" in out["message"]
        assert b.service.unfinished is not None and "remove" in b.service.unfinished
    finally:
        b.close()


@pytest.mark.parametrize("replaced", [False, True])
def test_a_restore_into_a_home_whose_index_file_was_removed_says_recall_waits_for_a_reindex(
    tmp_path, replaced
):
    b, restored = _homes(tmp_path, _line("session:s-old:0") + b"\n")
    try:
        b.say("s-old", "Zanzibar secret words.")
        for suffix in ("", "-wal", "-shm"):
            b.index.path.with_name(b.index.path.name + suffix).unlink(missing_ok=True)
        if replaced:  # an index copied back by hand, holding what the restore forgets
            b.index.path.write_bytes(b"an old copy")
        out = b.data("restore", name="a.tar.gz", replace=True)
        assert without_restore_lines(_memory(b)) == restored
        assert "the index was rebuilt" not in out["message"]
        what = "replaced by another file" if replaced else "removed"
        assert f"{b.index.path} was {what} while memoryd ran" in out["message"]
        assert "recall is refused until it is rebuilt: run bxctl reindex" in out["message"]
        with pytest.raises(IndexDamaged, match="bxctl reindex"):
            b.recall("zanzibar")
        _reindex(b)  # what the answer asks the owner to do
        assert "Zanzibar" not in b.recall("zanzibar")
        assert "Bluefinch note" in b.recall("bluefinch")
    finally:
        b.close()


class Killed(BaseException):
    """memoryd killed: nothing after this point runs."""


def _carried(name: str) -> bool:
    """A file a restore adds the home's forgotten keys to: forgotten.jsonl and the journal."""
    return name == "memory/forgotten.jsonl" or name.startswith("memory/edits/")


def test_a_kill_after_the_files_are_laid_keeps_the_session_keys_the_home_had_forgotten(
    tmp_path, monkeypatch
):
    # The archive lists one of the two keys.
    b, restored = _homes(tmp_path, _line("session:s-both:0") + b"\n")
    try:
        b.say("s-kept", "Quetzal secret words.")
        b.say("s-both", "Walrus secret words.")
        for key in ("session:s-kept:0", "session:s-both:0"):
            forgottenwrite.add(b.home, key, STAMP, "e2")
        b.service._writer.submit(WRITE, purge.purge, b.index, ["session:s-kept:0"]).result()
        b.service._writer.submit(WRITE, purge.purge, b.index, ["session:s-both:0"]).result()

        def fsync_dir(folder):  # the first step after the renames
            raise Killed

        monkeypatch.setattr(lay, "fsync_dir", fsync_dir)
        with pytest.raises(Killed):
            b.admin("restore", {"name": "a.tar.gz", "replace": True})
        assert lay.plan_path(b.home).exists()
    finally:
        b.close()
    monkeypatch.undo()
    again = Memoryd(tmp_path / "b")  # its start finishes the restore (lay.recover)
    try:
        assert not lay.plan_path(again.home).exists()
        lines = forgotten.path(again.home).read_bytes().splitlines()
        assert lines[0] == _line("session:s-both:0")  # the archive's line, whole
        assert [line for line in lines if b"session:s-both:0" in line] == lines[:1]
        assert [line for line in lines if b"session:s-kept:0" in line] != []
        assert len(lines) == 2
        files = _memory(again)
        assert {k: v for k, v in files.items() if not _carried(k)} == {
            k: v for k, v in restored.items() if not _carried(k)
        }
        # The journal is the archive's, and a forget line naming the key carried over.
        (month,) = [k for k in files if k.startswith("memory/edits/")]
        assert files[month].startswith(restored[month])
        added = [json.loads(x) for x in files[month][len(restored[month]) :].splitlines()]
        assert [x["action"] for x in added] == ["forget", "restore"]  # the restore's own last
        assert added[0]["forgot"]["keys"] == ["session:s-kept:0"]
        _reindex(again)
        assert "Quetzal" not in again.recall("quetzal")
        assert "Walrus" not in again.recall("walrus")
    finally:
        again.close()


def test_a_restore_lists_the_session_keys_the_home_had_forgotten_once(tmp_path):
    b, _ = _homes(tmp_path, _line("session:s-both:0") + b"\n")
    try:
        b.say("s-kept", "Quetzal secret words.")
        for key in ("session:s-kept:0", "session:s-both:0"):
            forgottenwrite.add(b.home, key, STAMP, "e2")
        b.data("restore", name="a.tar.gz", replace=True)
        lines = forgotten.path(b.home).read_bytes().splitlines()
        assert len(lines) == 2 and lines[0] == _line("session:s-both:0")
        assert b"session:s-kept:0" in lines[1] and b'"edit": "restore"' in lines[1]
        _reindex(b)
        assert "Quetzal" not in b.recall("quetzal")
    finally:
        b.close()


def test_an_index_memoryd_removed_itself_is_said_so_not_as_the_owners_removal(
    tmp_path, monkeypatch
):
    b, _ = _homes(tmp_path, _line("session:s-old:0") + b"\n")
    try:
        b.say("s-old", "Zanzibar secret words.")
        Broken(monkeypatch, b, "purge")
        b.data("restore", name="a.tar.gz", replace=True)
        monkeypatch.undo()
        why = "removed by memoryd after a restore could not bring it up to date (disk I/O error)"
        with pytest.raises(IndexDamaged) as refused:
            b.recall("zanzibar")
        assert why in str(refused.value) and "while memoryd ran" not in str(refused.value)
        stats = b.admin("stats", {})
        assert f"index: index/memory.sqlite3 was {why}" in stats
        assert "while memoryd ran" not in stats
        _reindex(b)  # what the answer and the refusal ask for
        assert "Zanzibar" not in b.recall("zanzibar")
        assert "Bluefinch note" in b.recall("bluefinch")
        assert "index/memory.sqlite3 was" not in b.admin("stats", {})
    finally:
        b.close()
