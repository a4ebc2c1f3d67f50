"""bxctl lays the session logs of an archive that declares its size as far as it declares, as
memoryd's verifier reads it: a log gzip shrinks a thousand times over is laid; a member past the
declaration, or a declaration past the home's free disk, lays nothing."""

import gzip
import hashlib
import io
import json
import tarfile

import pytest

from bxctl import sessionarchive, sessionlay
from proto import backupformat

LOG = b"".join(
    json.dumps({"type": "tool_result", "call_id": f"c{n}", "output": "0,0,0\n" * 40000}).encode()
    + b"\n"
    for n in range(40)
)


def archive(path, members: dict[str, bytes], declared: object) -> None:
    files = [
        {"path": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        for name, data in members.items()
    ]
    manifest = {"format": sessionarchive.FORMAT, "version": 1, "files": files, "counts": {}}
    headers = {backupformat.DECLARED: str(declared)}
    with (
        gzip.open(path, "wb", compresslevel=1) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT, pax_headers=headers) as tar,
    ):
        for name, data in [*members.items(), ("manifest.json", json.dumps(manifest).encode())]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.fixture
def home(tmp_path):
    (tmp_path / "home" / "sessions").mkdir(mode=0o700, parents=True)
    return tmp_path / "home"


def test_a_log_gzip_shrinks_past_the_old_ratio_is_laid(tmp_path, home, monkeypatch):
    monkeypatch.setattr(backupformat, "FLOOR", 1 << 20)
    path = tmp_path / "made.tar.gz"
    archive(path, {"sessions/long1/0.jsonl": LOG}, len(LOG))
    assert backupformat.RATIO * path.stat().st_size < len(LOG)
    done = sessionlay.lay(path, home)
    assert (done.problem, done.refused, done.laid) == (None, [], ["long1"])
    assert (home / "sessions" / "long1" / "0.jsonl").read_bytes() == LOG


def test_a_log_past_the_declaration_lays_nothing(tmp_path, home):
    path = tmp_path / "made.tar.gz"
    archive(path, {"sessions/s-one/0.jsonl": b"{}\n", "sessions/long1/0.jsonl": LOG}, 1000)
    done = sessionlay.lay(path, home)
    assert "more than the 1,000 bytes it declares ('sessions/long1/0.jsonl'" in done.problem
    assert done.laid == [] and list((home / "sessions").iterdir()) == []


def test_a_manifest_other_than_the_declaration_lays_nothing(tmp_path, home):
    path = tmp_path / "made.tar.gz"
    archive(path, {"sessions/long1/0.jsonl": LOG}, len(LOG) + 1)
    done = sessionlay.lay(path, home)
    assert f"but its manifest lists {len(LOG):,}" in done.problem
    assert done.laid == []


def test_a_declaration_past_the_free_disk_lays_nothing(tmp_path, home, monkeypatch):
    monkeypatch.setattr(sessionlay, "free_for", lambda home: 4096)
    path = tmp_path / "made.tar.gz"
    archive(path, {"sessions/long1/0.jsonl": LOG}, 10**12)
    done = sessionlay.lay(path, home)
    assert "more than the 4,096 bytes free on the home's disk" in done.problem
    assert done.laid == []
