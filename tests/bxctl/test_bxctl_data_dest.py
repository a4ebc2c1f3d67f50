"""bxctl memory backup PATH and export --out PATH refuse a PATH they could not write before
memoryd is asked: a failure then leaves backups/ as it was, no archive made and none pruned."""

import os

import pytest
import typer

from bxctl import handover
from tests.bxctl.test_bxctl_data import bx, fill, ok, refused
from tests.memoryd_process import MemorydProcess


@pytest.fixture
def memoryd(tmp_path):
    proc = MemorydProcess(tmp_path).start()
    yield proc
    proc.stop()


@pytest.mark.parametrize(
    "argv, nothing",
    [
        (["memory", "backup", "{dest}", "--keep", "1"], "no backup was made"),
        (["memory", "export", "--out", "{dest}"], "nothing was exported"),
    ],
)
@pytest.mark.parametrize("where", ["missing/copy", "a-file/copy"])
def test_a_path_in_a_missing_folder_is_refused_before_anything_is_written(
    memoryd, tmp_path, argv, nothing, where
):
    fill(memoryd)
    ok(bx(memoryd, "memory", "backup"))
    ok(bx(memoryd, "memory", "backup"))
    ok(bx(memoryd, "memory", "export"))
    (tmp_path / "a-file").write_text("not a folder")
    backups = memoryd.home / "backups"
    before = sorted(os.listdir(backups))
    dest = tmp_path / where
    line = refused(bx(memoryd, *[a.format(dest=dest) for a in argv]))
    assert line.endswith(f"{dest.parent} is not a folder; {nothing}"), line
    assert str(dest) in line
    assert sorted(os.listdir(backups)) == before
    assert not dest.exists()


COPIES = [
    (["memory", "backup", "{dest}"], "no backup was made"),
    (["memory", "export", "--out", "{dest}"], "nothing was exported"),
]


@pytest.mark.parametrize("argv", [argv for argv, _ in COPIES])
def test_a_name_as_long_as_the_file_system_takes_is_written(memoryd, tmp_path, argv):
    dest = tmp_path / ("b" * 248 + ".tar.gz")  # 255 bytes
    ok(bx(memoryd, *[a.format(dest=dest) for a in argv]))
    assert dest.stat().st_size > 0
    assert [n for n in os.listdir(tmp_path) if n.endswith(".tmp")] == []


@pytest.mark.parametrize(("argv", "nothing"), COPIES)
def test_a_name_too_long_is_refused_before_anything_is_written(memoryd, tmp_path, argv, nothing):
    backups = memoryd.home / "backups"
    before = sorted(os.listdir(backups))
    dest = tmp_path / ("c" * 300)
    line = refused(bx(memoryd, *[a.format(dest=dest) for a in argv]))
    assert line.endswith(f"File name too long (over 255 bytes); {nothing}"), line
    assert sorted(os.listdir(backups)) == before
    assert [n for n in os.listdir(tmp_path) if n.startswith(("c", "."))] == []


def test_a_copy_to_a_name_the_file_system_refuses_is_one_line(tmp_path, capsys):
    source = tmp_path / "made.tar.gz"
    source.write_bytes(b"archive")
    with pytest.raises(typer.Exit):  # not the OSError of removing a temporary file
        handover.copy_new(source, tmp_path / ("d" * 300), "; the backup is in made.tar.gz")
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("bxctl: cannot write ") and "File name too long" in line, line
    assert line.endswith("nothing was left; the backup is in made.tar.gz"), line
    assert sorted(os.listdir(tmp_path)) == ["made.tar.gz"]
