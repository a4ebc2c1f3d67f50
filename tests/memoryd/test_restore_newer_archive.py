"""An archive of a newer memoryd, which may hold a file this one does not write, is refused as
newer (naming that memoryd), never as foreign, though its manifest comes last; one of this
format with such a file is still refused as not memoryd's, and every bound is still checked
before the manifest. bxctl's reading of it for the session logs says the same."""

import gzip
import hashlib
import io
import itertools
import json
import tarfile

import pytest

from bxctl.sessionarchive import Unusable, survey
from memoryd.data import archive, layout
from memoryd.errors import AdminRefused
from tests.memoryd.owner_data_harness import Memoryd

_ADDED = itertools.count()


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def _file(name: str, data: bytes, link: str | None = None) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    if link is not None:
        info.type, info.linkname, info.size = tarfile.SYMTYPE, link, 0
    return info, data


def _newer(backup: bytes, version: int, extra: list[tuple[str, bytes, str | None]]) -> bytes:
    """backup as a memoryd of format version would write it with the members of extra (name,
    data, link) before its manifest, each listed there."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb") as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        with tarfile.open(fileobj=io.BytesIO(backup), mode="r:gz") as old:
            for member in old:
                data = old.extractfile(member).read()
                if member.name != archive.MANIFEST:
                    tar.addfile(member, io.BytesIO(data))
                    continue
                manifest = json.loads(data)
                manifest["version"], manifest["memoryd"] = version, "9.1.0"
                for name, body, link in extra:
                    info, body = _file(name, body, link)
                    tar.addfile(info, io.BytesIO(body))
                    digest = hashlib.sha256(body).hexdigest()
                    manifest["files"].append({"path": name, "size": len(body), "sha256": digest})
                info, body = _file(archive.MANIFEST, json.dumps(manifest).encode())
                tar.addfile(info, io.BytesIO(body))
    return out.getvalue()


def _restore(md: Memoryd, data: bytes) -> str:
    n = next(_ADDED)  # the home's memory, which must stay as it is, newer than the archive
    md.call({"action": "add", "file": "memory", "text": f"Router number {n} is a Turris Omnia."})
    (md.home.root / "backups" / "other.tar.gz").write_bytes(data)
    held = {name: p.read_bytes() for name, p in layout.memory_files(md.home)}
    with pytest.raises(AdminRefused) as e:
        md.admin("restore", {"name": "other.tar.gz", "replace": True})
    assert {name: p.read_bytes() for name, p in layout.memory_files(md.home)} == held
    assert not (md.home.memory / "future.jsonl").exists()
    assert not [p for p in md.home.memory.iterdir() if p.name.startswith(".restore")]
    assert "\n" not in str(e.value)
    return str(e.value)


def _backup(md: Memoryd) -> bytes:
    md.call({"action": "note", "text": "Launch window moved to Thursday."})
    return open(md.data("backup")["path"], "rb").read()


def test_an_archive_of_a_newer_format_with_a_file_this_memoryd_does_not_write_is_newer(md):
    data = _newer(_backup(md), archive.VERSION + 1, [("memory/future.jsonl", b"{}\n", None)])
    said = _restore(md, data)
    assert f"format {archive.VERSION + 1}, made by a newer memoryd (version '9.1.0')" in said
    assert "restore it with that memoryd or a newer one" in said
    assert "does not write" not in said


def test_an_archive_of_this_format_with_a_file_memoryd_does_not_write_is_still_foreign(md):
    data = _newer(_backup(md), archive.VERSION, [("memory/future.jsonl", b"{}\n", None)])
    said = _restore(md, data)
    assert "a file memoryd does not write: 'memory/future.jsonl'" in said


def test_a_newer_archive_is_held_to_every_bound_before_its_manifest(md):
    link = [("memory/future.jsonl", b"", "/etc/passwd")]
    assert "a link" in _restore(md, _newer(_backup(md), archive.VERSION + 1, link))
    climbs = [("memory/../../future.jsonl", b"x", None)]
    assert "climbs out" in _restore(md, _newer(_backup(md), archive.VERSION + 1, climbs))


def test_a_file_memoryd_does_not_write_in_an_archive_without_a_manifest_is_named(md):
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb") as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        info, body = _file("memory/future.jsonl", b"{}\n")
        tar.addfile(info, io.BytesIO(body))
    assert "does not write: 'memory/future.jsonl'" in _restore(md, out.getvalue())


def test_bxctl_reads_a_newer_archive_with_a_log_of_a_new_name_as_newer(md, tmp_path):
    extra = [("sessions/s-one/1.jsonl", b"{}\n", None)]
    path = tmp_path / "newer.tar.gz"
    path.write_bytes(_newer(_backup(md), archive.VERSION + 1, extra))
    with open(path, "rb") as raw, pytest.raises(Unusable) as e:
        survey(raw)
    assert "made by a newer memoryd (version '9.1.0')" in str(e.value)
    assert "restore it with that memoryd or a newer one" in str(e.value)


# The memory files an archive of each format may hold. A file added to memory/ comes with a new
# format version (proto/backupformat.py VERSION), so that a memoryd that does not know it refuses
# the archive as newer. labels.jsonl came under 1: no reader judged names after the manifest then.
WRITTEN = {
    1: (
        "soul.md",
        "memory.md",
        "user.md",
        "notes.md",
        "pending.jsonl",
        "forgotten.jsonl",
        "labels.jsonl",
    )
}


def test_a_file_added_to_memory_comes_with_a_new_archive_format_version():
    assert sorted(layout.ROOT_FILES) == sorted(WRITTEN[archive.VERSION])
    for name in layout.ROOT_FILES:
        assert layout.MEMBER.fullmatch(f"memory/{name}")
    for name in ("memory/future.jsonl", "memory/index/x.jsonl", "sessions/s-one/1.jsonl"):
        assert not layout.MEMBER.fullmatch(name)
