"""A backup counts notes.md's notes as an export does, wherever its chunks end: a header (or a
forgotten note's marker) that a chunk's end cuts is one note (or none) like any other. Its answer,
its manifest and the restore's answer give the notes notes.md holds; an archive whose manifest an
older memoryd counted a chunk at a time (a cut header uncounted) still restores."""

import datetime as dt
import gzip
import io
import json
import shutil
import tarfile

import pytest

from memoryd.data import archive, backup, layout, notestream, snapshot
from memoryd.errors import AdminRefused
from memoryd.journal import forgottenmarker
from memoryd.memory import notes
from tests.memoryd.owner_data_harness import Memoryd

WHEN = dt.datetime(2026, 12, 1, 10, 0, tzinfo=dt.UTC)
TEXT = "the owner waters the plants every morning"
MIB = 1 << 20  # the chunk a backup reads notes.md in


def _note(text: str = TEXT) -> bytes:
    return notes.noted(text, WHEN, "mm-s0001", "private", False).encode()


def _told(data: bytes) -> int:
    """The notes of data as an export tells them (its notes but the forget's markers)."""
    return sum(not forgottenmarker.is_marker(n.text) for n in notestream.entries([data]))


def _small_file() -> bytes:
    """Notes of every shape the count tells apart: plain ones, a forgotten one (its header, then
    only the marker), a damaged header, a note of two lines, with a byte-order mark first."""
    gone = notes.noted(
        forgottenmarker.marker("2026-12-02T09:00Z"), WHEN, "mm-s0002", "private", False
    )
    return (
        b"\xef\xbb\xbf"
        + _note()
        + _note("the spare key is under the blue pot")
        + gone.encode()
        + b"\xc2\xa7 a header the owner typed by hand\nits text\n"
        + _note("one line\nand another")
        + gone.encode()
        + _note()
    )


def _counted(tmp_path, data: bytes) -> int:
    path = tmp_path / "notes.md"
    path.write_bytes(data)
    snap = snapshot.of_files([("memory/notes.md", path)])
    try:
        return backup.counts(snap, None)["notes"]
    finally:
        snap.close()
        path.unlink()


def test_the_count_is_the_exports_at_every_chunk_size(tmp_path, monkeypatch):
    data = _small_file()
    assert _told(data) == 5
    for size in range(1, len(data) + 2):
        monkeypatch.setattr(snapshot.Held.chunks, "__defaults__", (size,))
        assert _counted(tmp_path, data) == 5, f"chunks of {size} bytes"


def _straddling(after: int) -> bytes:
    """Notes of 100 bytes past 1 MiB, a header cut by the 1 MiB mark, then after more notes."""
    one = _note()
    lead = MIB // len(one) - 1
    data = one * lead
    filler = MIB - 5 - len(data) - len(_note(""))
    data += _note("x" * filler)
    assert MIB - 5 == len(data)  # the next header is cut 5 bytes in
    return data + one * after


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def _with_notes(m: Memoryd, data: bytes) -> None:
    m.home.memory_file("notes.md").write_bytes(data)


def _manifest(path) -> dict:
    with tarfile.open(path, "r:gz") as tar:
        return json.loads(tar.extractfile(archive.MANIFEST).read())


def test_a_backup_at_the_real_chunk_size_says_every_note(md):
    data = _straddling(after=20)
    held = _told(data)
    _with_notes(md, data)
    made = md.data("backup")
    assert made["counts"]["notes"] == held == _manifest(made["path"])["counts"]["notes"]
    assert f"{held:,} notes" in made["message"], made["message"]
    assert md.data("export", format="jsonl")["notes"] == held


def _counted_notes(path, notes_said: int) -> bytes:
    """The archive at path with its manifest's notes count set to notes_said."""
    out = io.BytesIO()
    with tarfile.open(path, "r:gz") as src:
        with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for member in src:
                body = src.extractfile(member).read()
                if member.name == archive.MANIFEST:
                    manifest = json.loads(body)
                    manifest["counts"]["notes"] = notes_said
                    body = json.dumps(manifest).encode()
                    member.size = len(body)
                tar.addfile(member, io.BytesIO(body))
    return gzip.compress(out.getvalue())


def _restore_into_new_home(tmp_path, data: bytes, name: str) -> tuple[Memoryd, dict]:
    m = Memoryd(tmp_path / f"new-{name}")
    layout.backups(m.home).mkdir(mode=0o700, exist_ok=True)
    (layout.backups(m.home) / name).write_bytes(data)
    try:
        return m, m.data("restore", name=name)
    except BaseException:
        m.close()
        raise


def test_a_restore_says_every_note_and_takes_an_older_memoryds_count(md, tmp_path):
    data = _straddling(after=20)
    held = _told(data)
    _with_notes(md, data)
    path = md.data("backup")["path"]
    # as the memoryd before this one wrote it: the cut header uncounted
    m, out = _restore_into_new_home(tmp_path, _counted_notes(path, held - 1), "older.tar.gz")
    try:
        assert out["laid"]["notes"] == held
        assert f"{held:,} notes" in out["message"], out["message"]
        assert m.home.memory_file("notes.md").read_bytes() == data
    finally:
        m.close()
        shutil.rmtree(m.home.root)
    with pytest.raises(AdminRefused, match=f"manifest counts {held + 1:,} notes"):
        _restore_into_new_home(tmp_path, _counted_notes(path, held + 1), "changed.tar.gz")
