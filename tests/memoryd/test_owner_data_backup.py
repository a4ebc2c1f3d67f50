"""Backup and restore: the archive, its manifest, a restore that answers exactly as before, and
every bad archive refused in one line with nothing changed."""

import errno
import gzip
import io
import json
import os
import shutil
import stat
import tarfile

import pytest

from memoryd.data import archive, lay, layout
from memoryd.errors import AdminRefused
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.restore_lines import without_restore_lines


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def fill(m: Memoryd) -> None:
    m.call({"action": "add", "file": "memory", "text": "Owner prefers answers in UTC."})
    m.call({"action": "add", "file": "user", "text": "The owner's name is Ada."})
    m.call({"action": "add", "file": "memory", "text": "The router was replaced in May."})
    m.call({"action": "note", "text": "Launch window moved to Thursday."})
    m.call({"action": "add", "file": "memory", "text": "example.org says March."}, tainted=True)
    m.say("s-one", "what is the launch codename", "the codename is bluefinch")
    m.recall("launch")


def answers(m: Memoryd) -> dict:
    """What the owner and the agent see: log, block, show of the last edit, recall."""
    log = m.admin("log", {"n": 50, "json": True})
    last = json.loads(log)["edits"][-1]["id"] if "edits" in json.loads(log) else None
    return {
        "log": log,
        "block": m.admin("block", {"json": True}),
        "show": m.admin("show", {"id": last}) if last else None,
        "recall": [m.recall(q) for q in ("launch", "bluefinch", "router", "March")],
    }


def memory_bytes(m: Memoryd) -> dict:
    return {name: p.read_bytes() for name, p in layout.memory_files(m.home)}


def test_backup_writes_one_private_archive_with_its_manifest(md):
    fill(md)
    made = md.data("backup")
    path = md.home.root / "backups" / os.path.basename(made["path"])
    assert str(path) == made["path"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    # no session log in it, so no record (they stay in sessions/)
    assert made["counts"] == {"entries": 3, "notes": 2, "edits": 5, "pending": 0, "records": 0}
    with tarfile.open(path, "r:gz") as tar:
        names = tar.getnames()
        manifest = json.loads(tar.extractfile(archive.MANIFEST).read())
    assert names[-1] == archive.MANIFEST
    assert manifest["format"] == archive.FORMAT and manifest["version"] == archive.VERSION
    on_disk = memory_bytes(md)
    assert sorted(f["path"] for f in manifest["files"]) == sorted(on_disk)
    for f in manifest["files"]:
        data = on_disk[f["path"]]
        assert f["size"] == len(data)
        assert f["sha256"] == __import__("hashlib").sha256(data).hexdigest()
    assert not any(n.startswith("index/") or n.startswith("sessions/") for n in names)
    assert made["writer_wait_ms"] >= 0


def test_with_sessions_holds_the_logs_recall_reads(md):
    fill(md)
    made = md.data("backup", with_sessions=True)
    with tarfile.open(made["path"], "r:gz") as tar:
        assert "sessions/s-one/0.jsonl" in tar.getnames()
    assert made["counts"]["records"] == 2  # those of the log it holds


def test_backup_wipe_restore_answers_exactly_as_before(tmp_path):
    m = Memoryd(tmp_path / "home")
    fill(m)
    # The index is derived and rebuilt after a restore: hits of equal score come back in the
    # order a rebuilt index gives them, so "before" is what the home answers after a reindex.
    m.index.reindex()
    before = answers(m)
    files = memory_bytes(m)
    made = m.data("backup")
    saved = tmp_path / "saved.tar.gz"
    shutil.copy(made["path"], saved)
    m.close()
    shutil.rmtree(m.home.memory)
    shutil.rmtree(m.home.index_dir)
    shutil.rmtree(m.home.root / "backups")
    m = Memoryd(tmp_path / "home")
    try:
        (m.home.root / "backups").mkdir(mode=0o700, exist_ok=True)
        shutil.copy(saved, m.home.root / "backups" / "saved.tar.gz")
        out = m.data("restore", name="saved.tar.gz")
        assert out["before"] is None
        assert without_restore_lines(memory_bytes(m)) == files
        # the same answers, and the log lists the restore after the archive's edits
        now, then = answers(m), dict(before)
        edits, was = json.loads(now.pop("log"))["edits"], json.loads(then.pop("log"))["edits"]
        assert edits[:-1] == was and edits[-1]["action"] == "restore"
        assert edits[-1]["id"] == out["edit"] and now.pop("show") != then.pop("show")
        assert now == then
        last = m.store.journal_index.latest("memory.md").id
        assert "undid" in m.admin("undo", last)
        assert "The router was replaced" not in m.home.memory_file("memory.md").read_text()
    finally:
        m.close()


def test_restore_into_a_home_with_memory_needs_replace_and_backs_it_up(tmp_path):
    a = Memoryd(tmp_path / "a")
    fill(a)
    made = a.data("backup")
    a.close()
    b = Memoryd(tmp_path / "b")
    try:
        b.call({"action": "add", "file": "memory", "text": "Only in b."})
        shutil.copy(made["path"], b.home.root / "backups" / "a.tar.gz")
        held = memory_bytes(b)
        with pytest.raises(AdminRefused, match="holds memory.*--replace"):
            b.admin("restore", {"name": "a.tar.gz"})
        assert memory_bytes(b) == held
        out = b.data("restore", name="a.tar.gz", replace=True)
        assert "Only in b." not in b.home.memory_file("memory.md").read_text()
        assert out["before"] and out["before"] in out["message"]
        with tarfile.open(out["before"], "r:gz") as tar:
            kept = tar.extractfile("memory/memory.md").read()
        assert kept == held["memory/memory.md"]
    finally:
        b.close()


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb") as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _manifest(files: dict[str, bytes], **over) -> tuple[tarfile.TarInfo, bytes]:
    import hashlib

    listed = [
        {"path": n, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()}
        for n, d in files.items()
    ]
    value = {"format": archive.FORMAT, "version": 1, "files": listed, "counts": {}, **over}
    return _file(archive.MANIFEST, json.dumps(value).encode())


def _link(name: str, to: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = to
    return info, None


SOUL = {"memory/soul.md": b"soul\n"}


def _bad_archives(good: bytes) -> dict[str, tuple[bytes, str]]:
    flipped = bytearray(good)
    flipped[len(flipped) // 2] ^= 0xFF
    return {
        "truncated": (good[: len(good) // 2], "truncated|no manifest|damaged"),
        # Every member and the manifest whole, the gzip stream's checksum and length cut off.
        "no gzip trailer": (good[:-8], "truncated|damaged"),
        "gzip checksum": (good[:-8] + bytes(b ^ 0xFF for b in good[-8:-4]) + good[-4:], "damaged"),
        "damaged": (bytes(flipped), "truncated|damaged|match|readable"),
        "not gzip": (b"hello, this is not an archive", "not a readable tar.gz|damaged"),
        "foreign": (
            _tar([*map(lambda i: _file(*i), SOUL.items()), _manifest(SOUL, format="x")]),
            "foreign",
        ),
        "newer": (
            _tar([*map(lambda i: _file(*i), SOUL.items()), _manifest(SOUL, version=2)]),
            "newer memoryd",
        ),
        "climbs out": (_tar([_file("memory/../../etc/x", b"x"), _manifest(SOUL)]), "climbs out"),
        "absolute": (_tar([_file("/etc/x", b"x"), _manifest(SOUL)]), "climbs out"),
        "symlink": (_tar([_link("memory/notes.md", "/etc/passwd"), _manifest(SOUL)]), "a link"),
        "unknown file": (_tar([_file("memory/evil.sh", b"x"), _manifest(SOUL)]), "does not write"),
        "checksum": (_tar([_file("memory/soul.md", b"other"), _manifest(SOUL)]), "sha256"),
        "unlisted": (
            _tar(
                [
                    *map(lambda i: _file(*i), SOUL.items()),
                    _file("memory/notes.md", b""),
                    _manifest(SOUL),
                ]
            ),
            "does not list",
        ),
        "missing": (_tar([_manifest(SOUL)]), "lacks"),
        "no manifest": (_tar([_file("memory/soul.md", b"soul\n")]), "no manifest"),
    }


@pytest.mark.parametrize("case", list(_bad_archives(b"x" * 100)))
def test_a_bad_archive_is_refused_in_one_line_and_changes_nothing(md, case):
    fill(md)
    good = open(md.data("backup")["path"], "rb").read()
    data, reason = _bad_archives(good)[case]
    (md.home.root / "backups" / "bad.tar.gz").write_bytes(data)
    held = memory_bytes(md)
    with pytest.raises(AdminRefused) as e:
        md.admin("restore", {"name": "bad.tar.gz", "replace": True})
    assert "\n" not in str(e.value)
    assert __import__("re").search(reason, str(e.value)), str(e.value)
    assert memory_bytes(md) == held
    assert not [p for p in md.home.memory.iterdir() if p.name.startswith(".restore")]


@pytest.mark.parametrize("name", ["../x.tar.gz", "a/b.tar.gz", "-rf", "missing.tar.gz"])
def test_a_name_outside_backups_is_refused(md, name):
    with pytest.raises(AdminRefused):
        md.admin("restore", {"name": name})


def test_a_full_disk_during_backup_leaves_no_partial_archive(md, monkeypatch):
    fill(md)
    real = archive.write

    def full(out, *a, **k):
        out.write(b"x" * 1000)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(archive, "write", full)
    with pytest.raises(AdminRefused, match="No space left.*no archive was left"):
        md.admin("backup", {})
    assert list((md.home.root / "backups").iterdir()) == []
    monkeypatch.setattr(archive, "write", real)
    assert md.data("backup")["counts"]["entries"] == 3


def test_keep_removes_all_but_the_newest(md):
    folder = md.home.root / "backups"
    folder.mkdir(mode=0o700, exist_ok=True)
    for stamp in ("20260101T000000Z", "20260102T000000Z", "20260103T000000Z"):
        (folder / f"memory-{stamp}.tar.gz").write_bytes(b"old")
    (folder / "mine.tar.gz").write_bytes(b"not memoryd's")
    made = md.data("backup", keep=2)
    left = sorted(p.name for p in folder.iterdir())
    assert made["removed"] == ["memory-20260101T000000Z.tar.gz", "memory-20260102T000000Z.tar.gz"]
    assert left == sorted(
        ["memory-20260103T000000Z.tar.gz", os.path.basename(made["path"]), "mine.tar.gz"]
    )


@pytest.mark.parametrize("stop_after", [0, 1, 2, 5, 100])
def test_a_kill_during_the_lay_leaves_before_or_after(tmp_path, monkeypatch, stop_after):
    a = Memoryd(tmp_path / "a")
    fill(a)
    made = a.data("backup")
    after = memory_bytes(a)
    a.close()
    b = Memoryd(tmp_path / "b")
    try:
        b.call({"action": "add", "file": "user", "text": "Before the restore."})
        before = memory_bytes(b)
        shutil.copy(made["path"], b.home.root / "backups" / "a.tar.gz")
        real, calls = os.replace, []

        def killed(src, dst, *args, **kw):
            if str(dst).endswith(".ids.json"):  # the staged journal's ids, before the lay
                return real(src, dst, *args, **kw)
            if len(calls) >= stop_after:
                raise SystemExit("killed")
            calls.append(dst)
            return real(src, dst, *args, **kw)

        monkeypatch.setattr(lay.os, "replace", killed)
        try:
            b.admin("restore", {"name": "a.tar.gz", "replace": True})
        except SystemExit:
            pass
        monkeypatch.setattr(lay.os, "replace", real)
        lay.recover(b.home)
        now = memory_bytes(b)
        assert now == before or without_restore_lines(now) == after
        if stop_after > 0:
            assert without_restore_lines(now) == after
        assert not [p for p in b.home.memory.iterdir() if p.name.startswith(".restore")]
    finally:
        b.close()


def test_a_full_disk_while_staging_a_restore_changes_nothing(tmp_path, monkeypatch):
    a = Memoryd(tmp_path / "a")
    fill(a)
    made = a.data("backup")
    a.close()
    b = Memoryd(tmp_path / "b")
    try:
        shutil.copy(made["path"], b.home.root / "backups" / "a.tar.gz")
        held = memory_bytes(b)

        def full(source, dest):
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(archive, "_copy", full)
        with pytest.raises(AdminRefused, match="No space left.*as it was"):
            b.admin("restore", {"name": "a.tar.gz"})
        assert memory_bytes(b) == held
        assert not [p for p in b.home.memory.iterdir() if p.name.startswith(".restore")]
    finally:
        b.close()


@pytest.mark.parametrize("keep", [1, 2])
def test_keep_never_removes_the_archive_just_written(md, keep):
    """An archive named later than now (the clock ran ahead when it was made, or is behind now)
    does not push the new one out, nor is it counted among the newest: the new one is kept with
    the newest keep - 1 of those named before it, and the one named ahead is left and said."""
    folder = md.home.root / "backups"
    folder.mkdir(mode=0o700, exist_ok=True)
    for stamp in ("20260101T000000Z", "20990601T000000Z"):
        (folder / f"memory-{stamp}.tar.gz").write_bytes(b"old")
    made = md.data("backup", keep=keep)
    left = sorted(p.name for p in folder.iterdir())
    assert os.path.exists(made["path"])
    kept = ["memory-20260101T000000Z.tar.gz"] if keep == 2 else []
    ahead = "memory-20990601T000000Z.tar.gz"
    assert left == sorted([os.path.basename(made["path"]), ahead, *kept])
    assert made["removed"] == sorted({"memory-20260101T000000Z.tar.gz"} - set(kept))
    assert made["ahead"] == [ahead]
    assert (
        f"left 1 backup named after this one ({ahead}), neither counted among the newest "
        f"{keep} nor removed: either the clock is behind now or it ran ahead"
    ) in made["message"]


def test_a_forgotten_note_is_not_counted_as_a_note(tmp_path):
    """Its header stays with the marker in its text; export and the index count no such note,
    and neither does the backup's summary."""
    m = Memoryd(tmp_path / "home")
    try:
        m.call({"action": "note", "text": "The spare key is under the blue pot."})
        m.call({"action": "note", "text": "The gate code is 4471."})
        m.data("forget", id="The gate code is 4471.")
        made = m.data("backup")
        assert ": 0 entries, 1 note, " in made["message"], made["message"]
    finally:
        m.close()
