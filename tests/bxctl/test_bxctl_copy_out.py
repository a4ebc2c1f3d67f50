"""bxctl memory backup PATH and export --out PATH against a real memoryd: the older archives and
exports are removed only once the copy is made, and a copy that fails says where memoryd's file
is; a socket of another home than $BOXMAKER_HOME is refused before memoryd is asked."""

import errno
import json
import os
import time

import pytest

from bxctl import handover
from bxctl.cli import app
from tests.bxctl.test_bxctl_data import bx, fill, ok, refused, runner
from tests.memoryd_process import MemorydProcess


@pytest.fixture
def memoryd(tmp_path):
    proc = MemorydProcess(tmp_path).start()
    yield proc
    proc.stop()


def archives(memoryd) -> list[str]:
    return sorted(n for n in os.listdir(memoryd.home / "backups") if n.startswith("memory-"))


def exports(memoryd) -> list[str]:
    return sorted(n for n in os.listdir(memoryd.home / "backups") if n.startswith("export-"))


def old_export(memoryd) -> str:
    """An export made long enough ago that the next one removes it."""
    name = "export-20200101T000000Z.jsonl"
    (memoryd.home / "backups" / name).write_text("{}\n")
    return name


def full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize(
    ("argv", "what", "listed"),
    [
        (["memory", "backup", "{dest}", "--keep", "1"], "backup", archives),
        (["memory", "export", "--out", "{dest}"], "export", exports),
    ],
)
def test_a_copy_that_fails_names_the_file_made_and_removes_nothing_older(
    memoryd, tmp_path, monkeypatch, argv, what, listed
):
    fill(memoryd)
    ok(bx(memoryd, "memory", "backup"))
    time.sleep(1.05)  # archive names hold the second
    ok(bx(memoryd, "memory", "backup"))
    old_export(memoryd)
    before = listed(memoryd)
    dest = tmp_path / "usb.out"
    monkeypatch.setattr(handover.shutil, "copyfileobj", full_disk)
    line = refused(bx(memoryd, *[a.format(dest=dest) for a in argv]))
    [made] = sorted(set(listed(memoryd)) - set(before))
    assert set(before) < set(listed(memoryd)), "an older one was removed"
    assert line.startswith(f"bxctl: cannot write {dest}: No space left on device"), line
    assert line.endswith(
        f"the {what} is in {memoryd.home / 'backups' / made}, and no older {what} was removed"
    ), line
    assert not dest.exists()
    assert [n for n in os.listdir(tmp_path) if n.endswith(".tmp")] == []


@pytest.mark.parametrize(
    ("argv", "listed", "kept"),
    [
        (["memory", "backup", "{dest}", "--keep", "1", "--json"], archives, 1),
        (["memory", "export", "--out", "{dest}", "--json"], exports, 1),
    ],
)
def test_a_copy_made_then_removes_the_older_ones(memoryd, tmp_path, argv, listed, kept):
    ok(bx(memoryd, "memory", "backup"))
    time.sleep(1.05)
    ok(bx(memoryd, "memory", "backup"))
    old_export(memoryd)
    before = listed(memoryd)
    dest = tmp_path / "copy.out"
    reply = json.loads(ok(bx(memoryd, *[a.format(dest=dest) for a in argv])))
    after = listed(memoryd)
    assert len(after) == kept and os.path.basename(reply["path"]) in after
    assert sorted(reply["removed"]) == before[: len(before) + 1 - kept]
    assert dest.read_bytes() == (memoryd.home / "backups" / after[0]).read_bytes()
    assert "; copied to " in reply["message"] and "; removed " in reply["message"]


@pytest.mark.parametrize(
    "argv",
    [
        ["memory", "backup", "{out}", "--keep", "1"],
        ["memory", "backup"],
        ["memory", "export"],
        ["memory", "restore", "{out}"],
        ["memory", "import", "{out}"],
    ],
)
def test_a_socket_of_another_home_is_refused_before_memoryd_acts(memoryd, tmp_path, argv):
    ok(bx(memoryd, "memory", "backup"))
    other = tmp_path / "stackhome"
    (other / "backups").mkdir(parents=True)
    out = tmp_path / "copy.tar.gz"
    if "backup" not in argv:
        out.write_bytes(b"x")
    before = sorted(os.listdir(memoryd.home / "backups"))
    result = runner.invoke(
        app,
        [a.format(out=out) for a in argv] + ["--memory-socket", str(memoryd.admin_socket)],
        env={"BOXMAKER_HOME": str(other)},
    )
    line = refused(result)
    assert str(memoryd.home) in line and str(other) in line, line
    assert line.endswith("nothing was done"), line
    assert sorted(os.listdir(memoryd.home / "backups")) == before


def test_a_socket_elsewhere_of_another_home_is_refused_before_memoryd_acts(memoryd, tmp_path):
    """A link elsewhere to another home's socket is told by where it leads: refused before
    memoryd is asked, so no backup is made, none is copied, and nothing older is removed."""
    ok(bx(memoryd, "memory", "backup"))
    time.sleep(1.05)
    other = tmp_path / "stackhome"
    (other / "backups").mkdir(parents=True)
    link = tmp_path / "m.sock"
    link.symlink_to(memoryd.admin_socket)
    before = archives(memoryd)
    out = tmp_path / "copy.tar.gz"
    result = runner.invoke(
        app,
        ["memory", "backup", str(out), "--keep", "1", "--memory-socket", str(link)],
        env={"BOXMAKER_HOME": str(other)},
    )
    line = refused(result)
    assert line == (
        f"bxctl: --memory-socket {link} is the memoryd of the home {memoryd.home}, but "
        f"BOXMAKER_HOME is {other}: set BOXMAKER_HOME to that home or leave out --memory-socket; "
        "nothing was done"
    )
    assert archives(memoryd) == before and not out.exists()
