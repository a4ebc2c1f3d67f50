"""restore: an archive that would unpack to far more than memoryd writes, a manifest of the wrong
shape, an archive without its core files, and a --replace whose backup of the home fails, each
refused in one line before anything is laid; the backup of what is there is written first."""

import errno
import functools
import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from memoryd.data import archive, backup, lay, layout
from memoryd.errors import AdminRefused
from tests.memoryd.owner_data_harness import Memoryd

CORE = {
    "memory/soul.md": b"soul\n",
    "memory/memory.md": b"Restored fact.\n",
    "memory/user.md": b"",
    "memory/notes.md": b"",
}
COUNTS = {"entries": 1, "notes": 0, "edits": 0, "pending": 0, "records": 0}


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def _info(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = 0o600
    return info


def _manifest(files: dict[str, bytes], **over) -> bytes:
    listed = [
        {"path": n, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()}
        for n, d in files.items()
    ]
    value = {"format": archive.FORMAT, "version": 1, "files": listed, "counts": COUNTS, **over}
    return json.dumps(value).encode()


def _archive(files: dict[str, bytes], manifest: bytes | None = None, extra=()) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in files.items():
            tar.addfile(_info(name, len(data)), io.BytesIO(data))
        for info, data in extra:
            tar.addfile(info, io.BytesIO(data))
        data = _manifest(files) if manifest is None else manifest
        tar.addfile(_info(archive.MANIFEST, len(data)), io.BytesIO(data))
    return gzip.compress(buf.getvalue())


def _hand(m: Memoryd, data: bytes, name: str = "a.tar.gz") -> str:
    (m.home.root / "backups" / name).write_bytes(data)
    return name


def _files(m: Memoryd) -> dict[str, bytes]:
    return {name: p.read_bytes() for name, p in layout.memory_files(m.home)}


def _no_staging(m: Memoryd) -> bool:
    return not [p for p in m.home.memory.iterdir() if p.name.startswith(".restore")]


def _sparse(size: int) -> tuple[tarfile.TarInfo, bytes]:
    info = _info("memory/notes.md", 1)
    info.pax_headers = {
        "GNU.sparse.map": f"{size - 1},1",
        "GNU.sparse.realsize": str(size),
        "GNU.sparse.size": str(size),
        "GNU.sparse.name": "memory/notes.md",
    }
    return info, b"\n"


@functools.cache
def _bad() -> dict[str, tuple[bytes, str]]:
    core = {k: v for k, v in CORE.items() if k != "memory/notes.md"}
    zeros = {**CORE, "memory/notes.md": b"\0" * (archive.FLOOR + (1 << 20))}
    many = {**CORE}
    for year in range(2000, 2101):
        for month in range(1, 13):
            for journal in ("edits", "recalls"):
                many[f"memory/{journal}/{year}-{month:02}.jsonl"] = b""
    cases = {
        "sparse member": (_archive(core, extra=[_sparse(1 << 30)]), "other than a plain file"),
        "unpacks too far": (_archive(zeros), "unpacks to more than"),
        "too many members": (_archive(many), "more files than memoryd ever writes"),
        "a manifest past its bound": (
            _archive(CORE, _manifest(CORE, pad="x" * archive.MANIFEST_MAX)),
            "manifest.json is larger than memoryd ever writes it",
        ),
        "a trailing newline in a name": (
            _archive({**CORE, "memory/notes.md\n": b""}),
            "does not write",
        ),
        "counts a list": (_archive(CORE, _manifest(CORE, counts=[1, 2])), "counts wrongly"),
        "a count as text": (
            _archive(CORE, _manifest(CORE, counts={**COUNTS, "pending": "many"})),
            "counts wrongly",
        ),
        "counts that are not the files'": (
            _archive(CORE, _manifest(CORE, counts={**COUNTS, "entries": 999})),
            "counts 999 entries, its files hold 1",
        ),
        "version as text": (
            _archive(CORE, _manifest(CORE, version="1")),
            "no format version \\(a whole number\\)",
        ),
        "version 0": (_archive(CORE, _manifest(CORE, version=0)), "format 0, which no memoryd"),
        "a negative version": (
            _archive(CORE, _manifest(CORE, version=-3)),
            "format -3, which no memoryd writes",
        ),
        "a created time holding a line": (
            _archive(CORE, _manifest(CORE, created="2026-12-04T09:00:00Z\nbxctl: all good")),
            "gives 'created' as .*which memoryd never writes there",
        ),
        "a version holding a terminal code": (
            _archive(CORE, _manifest(CORE, memoryd="0.2.0\x1b[2J")),
            "gives 'memoryd' as .*which memoryd never writes there",
        ),
        "deeply nested manifest": (_archive(CORE, b"[" * 100_000 + b"]" * 100_000), "nested"),
        "soul only": (_archive({"memory/soul.md": b"soul\n"}), "holds no memory.md"),
        "no notes.md": (_archive(core, _manifest(core)), "holds no notes.md"),
    }
    return cases


@pytest.mark.parametrize("case", list(_bad()))
def test_an_archive_beyond_what_memoryd_writes_is_refused_before_anything_is_laid(md, case):
    md.call({"action": "add", "file": "memory", "text": "Kept fact."})
    data, reason = _bad()[case]
    held = _files(md)
    with pytest.raises(AdminRefused, match=reason) as e:
        md.admin("restore", {"name": _hand(md, data), "replace": True})
    assert "\n" not in str(e.value)
    assert _files(md) == held
    assert _no_staging(md)
    assert not list((md.home.root / "backups").glob("memory-*.tar.gz"))


def test_staging_never_holds_more_than_the_archive_allows(md, monkeypatch):
    """A bomb is stopped as it unpacks, not after: at most the bound is ever written."""
    written = []
    real = archive._copy

    def counting(source, dest):
        out = real(source, dest)
        written.append(out[0])
        return out

    monkeypatch.setattr(archive, "_copy", counting)
    data = _archive({**CORE, "memory/notes.md": b"\0" * (archive.FLOOR * 2)})
    with pytest.raises(AdminRefused, match="unpacks to more than"):
        md.admin("restore", {"name": _hand(md, data)})
    assert sum(written) <= archive.unpacked_max(len(data))


def test_session_logs_are_hashed_never_staged(md, monkeypatch):
    log = b'{"t": "user"}\n'
    files = {**CORE, "sessions/s-one/0.jsonl": log}
    staged = []
    real = archive._copy
    monkeypatch.setattr(archive, "_copy", lambda s, d: staged.append(d) or real(s, d))
    out = md.data("restore", name=_hand(md, _archive(files)))
    assert out["session_logs"] == 1
    assert None in staged and all(d is None or "sessions" not in str(d) for d in staged)
    assert md.home.memory_file("memory.md").read_bytes() == b"Restored fact.\n"


def test_replace_writes_the_backup_before_it_lays_anything(md, monkeypatch):
    md.call({"action": "add", "file": "memory", "text": "Old precious fact."})
    seen = []
    real = lay.commit

    def commit(home, *a):
        seen.append(sorted(p.name for p in (home.root / "backups").glob("memory-*.tar.gz")))
        return real(home, *a)

    monkeypatch.setattr(lay, "commit", commit)
    out = md.data("restore", name=_hand(md, _archive(CORE)), replace=True)
    assert seen == [[os.path.basename(out["before"])]]
    with tarfile.open(out["before"], "r:gz") as tar:
        assert b"Old precious fact." in tar.extractfile("memory/memory.md").read()


def test_a_failed_backup_of_the_home_lays_nothing_and_says_so(md, monkeypatch):
    md.call({"action": "add", "file": "memory", "text": "Old precious fact."})
    held = _files(md)

    def full(out, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(archive, "write", full)
    with pytest.raises(AdminRefused, match="No space left.*nothing was restored"):
        md.admin("restore", {"name": _hand(md, _archive(CORE)), "replace": True})
    assert _files(md) == held
    assert _no_staging(md)


def test_a_damaged_memory_file_is_backed_up_as_it_is_then_replaced(md):
    md.call({"action": "add", "file": "user", "text": "Precious user fact."})
    md.home.memory_file("memory.md").write_bytes(b"\xff damaged\n")
    out = md.data("restore", name=_hand(md, _archive(CORE)), replace=True)
    with tarfile.open(out["before"], "r:gz") as tar:
        assert tar.extractfile("memory/memory.md").read() == b"\xff damaged\n"
        assert b"Precious user fact." in tar.extractfile("memory/user.md").read()
    assert md.home.memory_file("memory.md").read_bytes() == b"Restored fact.\n"


def test_memory_written_after_the_backup_is_backed_up_again_before_the_lay(md, monkeypatch):
    md.call({"action": "add", "file": "memory", "text": "Old precious fact."})
    real = backup.make
    made = []

    def make(home, snap, with_sessions, **kind):
        out = real(home, snap, with_sessions, **kind)
        if not made:  # a write lands between the first backup and the lay
            md.store.home.memory_file("user.md").write_text("Written meanwhile.\n")
        made.append(out.path)
        return out

    monkeypatch.setattr(backup, "make", make)
    out = md.data("restore", name=_hand(md, _archive(CORE)), replace=True)
    assert len(made) == 2 and out["before"] == str(made[1])
    assert not made[0].exists()
    with tarfile.open(out["before"], "r:gz") as tar:
        assert tar.extractfile("memory/user.md").read() == b"Written meanwhile.\n"


def test_a_folder_where_a_file_is_to_be_laid_is_refused_before_the_plan(md):
    (md.home.recalls / "2026-11.jsonl").mkdir()
    files = {**CORE, "memory/recalls/2026-11.jsonl": b'{"a": 1}\n'}
    with pytest.raises(AdminRefused, match="2026-11.jsonl is not a regular file.*nothing was"):
        md.admin("restore", {"name": _hand(md, _archive(files))})
    assert not lay.plan_path(md.home).exists()
    assert _no_staging(md)
    assert md.home.memory_file("memory.md").read_bytes() == b""


def test_a_whole_backup_still_restores_with_its_counts(tmp_path):
    a = Memoryd(tmp_path / "a")
    a.call({"action": "add", "file": "memory", "text": "Fact one."})
    a.call({"action": "note", "text": "A note."})
    made = a.data("backup")
    a.close()
    b = Memoryd(tmp_path / "b")
    try:
        shutil.copy(made["path"], b.home.root / "backups" / "a.tar.gz")
        out = b.data("restore", name="a.tar.gz")
        assert out["counts"] == made["counts"]
        assert "1 entry, 1 note" in out["message"]
    finally:
        b.close()


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("memory/memory.md", "memory.md is over its limit: 4,400 of 2,200 characters"),
        ("memory/user.md", "user.md is over its limit: 4,400 of 1,375 characters"),
    ],
)
def test_a_backup_of_a_file_past_its_limit_is_restored_whole_and_said(md, name, said):
    # A hand edit past the limit is backed up as it is; restored, no session could start, so
    # the restore's answer says so (a whole backup says nothing of the kind).
    whole = md.data("restore", name=_hand(md, _archive(CORE)), replace=True)
    assert "no session can start" not in whole["message"]
    files = {**CORE, name: b"x" * 4400 + b"\n"}
    entries = 1 if name == "memory/memory.md" else 2  # the core's memory.md holds one
    made = _archive(files, _manifest(files, counts={**COUNTS, "entries": entries}))
    out = md.data("restore", name=_hand(md, made, "over.tar.gz"), replace=True)
    assert out["message"].startswith("restored over.tar.gz")
    assert (
        f"but no session can start until the restored memory is mended: {said}" in (out["message"])
    )
    assert _files(md)[name] == files[name]


def _counted_notes(data: bytes, notes: int) -> bytes:
    """The archive data with its manifest's notes count set to notes, everything else as it was."""
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as src:
        with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for member in src:
                body = src.extractfile(member).read()
                if member.name == archive.MANIFEST:
                    manifest = json.loads(body)
                    manifest["counts"]["notes"] = notes
                    body = json.dumps(manifest).encode()
                    member.size = len(body)
                tar.addfile(member, io.BytesIO(body))
    return gzip.compress(out.getvalue())


def test_a_backup_whose_manifest_counted_a_forgotten_note_as_a_note_still_restores(md):
    # A memoryd before this one counted a forgotten note (its header and marker) among the notes
    # of its manifest: its backups restore; a count neither way holds is still refused.
    md.call({"action": "note", "text": "The plumber comes on Tuesday."})
    md.call({"action": "note", "text": "The bins go out on Monday."})
    md.admin("search", {"query": "plumber"})
    md.admin("forget", {"id": "note:0"})
    made = Path(md.data("backup")["path"]).read_bytes()
    held = _files(md)
    with pytest.raises(AdminRefused, match="manifest counts 3 notes, its files hold 1"):
        md.admin("restore", {"name": _hand(md, _counted_notes(made, 3)), "replace": True})
    assert _files(md) == held
    out = md.data("restore", name=_hand(md, _counted_notes(made, 2), "older.tar.gz"), replace=True)
    assert out["message"].startswith("restored older.tar.gz")
    assert "plumber" not in md.home.memory_file("notes.md").read_text()
