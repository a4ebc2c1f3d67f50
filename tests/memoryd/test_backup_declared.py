"""An archive is unpacked as far as it declares, not as far as a ratio of its size: a session log
of one line repeated (a tool result read many times over) shrinks a thousand times in gzip, and
its backup is still written and restored. What bounds a bomb is the declaration, checked against
each member's header as it comes and against the manifest, and taken no further than the free
disk; an archive that declares nothing (an older memoryd's) keeps the old ratio."""

import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile

import pytest

from memoryd.data import archive, archiveheld
from memoryd.errors import AdminRefused
from proto import backupformat
from proto.records import AssistantRecord, UserRecord, append_session_record
from tests.memoryd.owner_data_harness import Memoryd, T

CORE = {
    "memory/soul.md": b"soul\n",
    "memory/memory.md": b"Restored fact.\n",
    "memory/user.md": b"",
    "memory/notes.md": b"",
}
COUNTS = {"entries": 1, "notes": 0, "edits": 0, "pending": 0, "records": 0}
ROW = "0,0,0,0,0,0,0,0\n"


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


@pytest.fixture
def other(tmp_path):
    m = Memoryd(tmp_path / "other")
    yield m
    m.close()


@pytest.fixture
def small_floor(monkeypatch):
    """The ratio's floor brought down so that a test-sized log passes the old ratio."""
    monkeypatch.setattr(backupformat, "FLOOR", 1 << 20)


def _manifest(files: dict[str, bytes]) -> bytes:
    listed = [
        {"path": n, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()}
        for n, d in files.items()
    ]
    value = {"format": archive.FORMAT, "version": 1, "files": listed, "counts": COUNTS}
    return json.dumps(value).encode()


def _archive(files: dict[str, bytes], declared: object, trailing: bytes = b"") -> bytes:
    """A tar.gz as memoryd writes it, declaring declared (str(declared) in the global header)."""
    buf = io.BytesIO()
    headers = {backupformat.DECLARED: str(declared)}
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT, pax_headers=headers) as tar:
        for name, data in [*files.items(), (archive.MANIFEST, _manifest(files))]:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o600
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(buf.getvalue() + trailing)


def _hand(m: Memoryd, data: bytes) -> str:
    (m.home.root / "backups").mkdir(mode=0o700, exist_ok=True)
    (m.home.root / "backups" / "a.tar.gz").write_bytes(data)
    return "a.tar.gz"


def _repetitive_log(m: Memoryd, session: str, reads: int) -> bytes:
    """A session that read a zero-filled CSV reads times, 256 KiB a read, as loopd logs it."""
    log = m.home.session_log(session)
    log.parent.mkdir(parents=True, mode=0o700)
    for n in range(reads):
        append_session_record(log, UserRecord(time=T, content=f"read part {n} of the export"))
        append_session_record(log, AssistantRecord(time=T, content=ROW * 16384))
    return log.read_bytes()


def test_a_session_log_gzip_shrinks_a_thousandfold_is_backed_up_and_restored(
    md, other, small_floor
):
    held = _repetitive_log(md, "long1", 32)
    made = md.data("backup", with_sessions=True)
    size = os.path.getsize(made["path"])
    assert backupformat.RATIO * size < len(held)  # past the ratio restore once took for a bomb
    with tarfile.open(made["path"], "r:gz") as tar:
        declared = int(tar.pax_headers[backupformat.DECLARED])
        listed = json.load(tar.extractfile(archive.MANIFEST))["files"]
    assert declared == sum(f["size"] for f in listed)
    folder = other.home.root / "backups"
    folder.mkdir(mode=0o700, exist_ok=True)
    shutil.copy(made["path"], folder / "handed.tar.gz")
    out = other.data("restore", name="handed.tar.gz")
    assert out["session_logs"] == 1


def test_a_member_past_the_declaration_is_refused_at_its_header(md, monkeypatch):
    files = {**CORE, "memory/notes.md": b"\0" * (4 << 20)}
    declared = sum(len(d) for n, d in CORE.items())
    copied = []
    real = archive._copy
    monkeypatch.setattr(archive, "_copy", lambda s, d: copied.append(d) or real(s, d))
    with pytest.raises(AdminRefused) as refused:
        md.data("restore", name=_hand(md, _archive(files, declared)))
    said = str(refused.value)
    assert f"more than the {declared:,} bytes it declares ('memory/notes.md'" in said
    assert "\n" not in said
    assert not [d for d in copied if d is not None and d.name == "notes.md"]
    assert md.home.memory_file("memory.md").read_bytes() != b"Restored fact.\n"


def test_an_archive_past_its_declared_room_is_refused_as_it_unpacks(md):
    """What follows the tar's end inside the gzip stream is held to the room of one header."""
    declared = sum(len(d) for d in CORE.values())
    data = _archive(CORE, declared, trailing=b"\0" * (8 << 20))
    with pytest.raises(AdminRefused, match=f"past the {declared:,} bytes of files it declares"):
        md.data("restore", name=_hand(md, data))


def test_a_declaration_past_the_free_disk_is_refused_before_a_byte(md, monkeypatch):
    monkeypatch.setattr(archive, "_free", lambda fd: 1000)
    with pytest.raises(AdminRefused) as refused:
        md.data("restore", name=_hand(md, _archive(CORE, 10**12)))
    said = str(refused.value)
    assert "declares 1,000,000,000,000 bytes of files, more than the 1,000 bytes free" in said
    assert "make room there" in said


def test_a_declaration_within_the_old_ratio_is_taken_on_a_full_disk(md, monkeypatch):
    """No archive the ratio took is refused by the free disk (a restore over the same home)."""
    monkeypatch.setattr(archive, "_free", lambda fd: 0)
    out = md.data("restore", name=_hand(md, _archive(CORE, sum(map(len, CORE.values())))))
    assert out["counts"]["entries"] == 1


@pytest.mark.parametrize(
    ("declared", "why"),
    [
        (sum(map(len, CORE.values())) + 5, "declares 25 bytes of files, but its manifest lists 20"),
        ("12abc", "declares its size as '12abc', not a number"),
        ("-1", "not a number"),
        ("9" * 21, "not a number"),
    ],
)
def test_a_declaration_memoryd_would_not_write_is_refused(md, declared, why):
    with pytest.raises(AdminRefused, match=why):
        md.data("restore", name=_hand(md, _archive(CORE, declared)))
    assert md.home.memory_file("memory.md").read_bytes() != b"Restored fact.\n"


def test_an_archive_that_declares_nothing_is_held_to_the_ratio(md, small_floor):
    """An older memoryd's archive: it declares nothing, and it restores within the ratio."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in [*CORE.items(), (archive.MANIFEST, _manifest(CORE))]:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o600
            tar.addfile(info, io.BytesIO(data))
    out = md.data("restore", name=_hand(md, gzip.compress(buf.getvalue())), replace=True)
    assert out["counts"]["entries"] == 1
    bomb = gzip.compress(buf.getvalue() + b"\0" * (8 << 20))
    with pytest.raises(AdminRefused, match="far more than a memoryd backup of its size holds"):
        md.data("restore", name=_hand(md, bomb), replace=True)


def test_forget_reads_such_an_archive_through_to_tell_it_does_not_hold_a_text(md, small_floor):
    """An archive past the old ratio is read through as restore reads it: one that does not
    hold a text forget took is not named as one that may."""
    _repetitive_log(md, "long1", 32)
    made = md.data("backup", with_sessions=True)
    name = os.path.basename(made["path"])
    assert archiveheld.holding(md.home, ["The owner's sister is called Ines."]) == []
    assert archiveheld.holding(md.home, ["read part 3 of the export"]) == [name]
