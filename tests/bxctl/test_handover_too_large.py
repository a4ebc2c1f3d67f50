"""A file the owner names for import or restore that memoryd would not read whole (an export over
its import limit) or that the home's disk has no room for is refused before a byte of it is
copied into the home, in one line saying its size and the limit; one that grows while it is
copied is stopped at the limit, and nothing is left."""

import os

import pytest
import typer
from typer.testing import CliRunner

from bxctl import handover
from bxctl.cli import app
from proto.backupformat import IMPORT_MAX
from tests.memoryd_process import MemorydProcess

runner = CliRunner()


@pytest.fixture
def memoryd(tmp_path):
    proc = MemorydProcess(tmp_path).start()
    yield proc
    proc.stop()


@pytest.fixture
def owners(tmp_path_factory):
    """A folder of the owner's, outside the home."""
    return tmp_path_factory.mktemp("owner")


@pytest.fixture
def copies(monkeypatch) -> list:
    """Every copy bxctl begins to write."""
    made: list = []
    real = handover.shutil.copyfileobj

    def spy(src, dst, length=0):
        made.append(dst)
        return real(src, dst, length)

    monkeypatch.setattr(handover.shutil, "copyfileobj", spy)
    return made


def _free(monkeypatch, folder, free: int) -> None:
    """The disk of folder said to have free bytes left."""
    real = os.statvfs

    class Said:
        f_bavail, f_frsize = free, 1

    def statvfs(path):
        return Said() if os.path.samefile(path, folder) else real(path)

    monkeypatch.setattr(handover.os, "statvfs", statvfs)


def bx(memoryd, *argv):
    return runner.invoke(app, list(argv), env={"BOXMAKER_HOME": str(memoryd.home)})


def _refusal(result) -> str:
    assert result.exit_code == 1, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def _backups(memoryd) -> list[str]:
    return sorted(p.name for p in (memoryd.home / "backups").iterdir())


def test_an_export_over_memoryds_import_limit_is_refused_before_it_is_copied(
    memoryd, owners, copies
):
    big = owners / "export.jsonl"
    with open(big, "wb") as f:
        f.truncate(IMPORT_MAX + 1)  # sparse: no room taken here
    before = _backups(memoryd)
    line = _refusal(bx(memoryd, "memory", "import", str(big)))
    assert "too large" in line and f"{IMPORT_MAX + 1:,} bytes" in line
    assert f"{IMPORT_MAX:,} bytes memoryd imports at most" in line
    assert "nothing was copied" in line and "No space" not in line
    assert copies == [] and _backups(memoryd) == before


@pytest.mark.parametrize("command", ["import", "restore"])
def test_a_file_larger_than_the_room_on_the_homes_disk_is_refused_before_it_is_copied(
    memoryd, owners, copies, monkeypatch, command
):
    source = owners / ("export.jsonl" if command == "import" else "backup.tar.gz")
    source.write_bytes(b"x" * 5000)
    _free(monkeypatch, memoryd.home / "backups", 4096)
    before = _backups(memoryd)
    line = _refusal(bx(memoryd, "memory", command, str(source)))
    assert "too large" in line and "5,000 bytes" in line
    assert "4,096 bytes free on the home's disk" in line and "make room" in line
    assert "nothing was copied" in line
    assert copies == [] and _backups(memoryd) == before


def test_a_file_that_fits_the_room_is_still_handed_over(memoryd, owners, monkeypatch):
    source = owners / "backup.tar.gz"
    source.write_bytes(b"not an archive")
    _free(monkeypatch, memoryd.home / "backups", len(b"not an archive"))
    line = _refusal(bx(memoryd, "memory", "restore", str(source)))
    assert "truncated or damaged" in line  # memoryd read it, and said what it is
    assert _backups(memoryd) == []


def test_a_file_that_grows_while_it_is_copied_is_stopped_at_the_limit(
    tmp_path, monkeypatch, capsys
):
    source = tmp_path / "export.jsonl"
    source.write_bytes(b"x" * 80)
    out = tmp_path / "backups"
    out.mkdir()
    real = handover.shutil.copyfileobj
    read: list[int] = []

    def growing(src, dst, length=0):
        with open(source, "ab") as f:
            f.write(b"y" * 10_000)
        inner = src._source.read
        src._source.read = lambda n=-1: read.append(n) or inner(n)
        return real(src, dst, length)

    monkeypatch.setattr(handover.shutil, "copyfileobj", growing)
    room = handover.Room(100, "memoryd imports at most", "")
    with pytest.raises(typer.Exit):
        handover.copy_new(source, out / "copy.jsonl", rooms=[room])
    assert list(out.iterdir()) == []
    assert sum(read) <= 101  # never past the limit and the byte that tells
    line = capsys.readouterr().err
    assert "too large: it grew, while it was copied, past the 100 bytes" in line
    assert "nothing was left" in line
