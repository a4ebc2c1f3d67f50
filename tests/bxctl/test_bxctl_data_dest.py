"""bxctl memory backup PATH and export --out PATH refuse a PATH they could not write before
memoryd is asked: a failure then leaves backups/ as it was, no archive made and none pruned."""

import os

import pytest

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
