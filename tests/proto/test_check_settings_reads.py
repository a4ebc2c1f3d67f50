"""scripts/check_settings.py reads the settings as the roles do (proto.files.read_setting): a FIFO
among them is one line, not a check that never ends; a starter soul.md or a system.md the roles
would refuse at start, or that would refuse every session, is a mistake the check names; and a
role's file that is a folder is said to be one, not "missing"."""

import os
import shutil
import sys

import pytest

from tests.integration.stack import REPO, make_settings
from tests.proto.nowait import without_waiting

sys.path.insert(0, os.fspath(REPO / "scripts"))  # scripts/ is not a package
from check_settings import check  # noqa: E402


@pytest.fixture
def folders(tmp_path, monkeypatch):
    monkeypatch.setenv("BOXMAKER_HOME", "/var/lib/boxmaker")  # check() sets it; restored after
    settings = make_settings(tmp_path)
    home = tmp_path / "home"
    shutil.copytree(REPO / "config/grants", home / "grants")
    return settings, home


@pytest.mark.parametrize(
    "name, said",
    [
        ("soul.md", "memoryd: {path}: cannot read the starter soul: a FIFO, not a regular file"),
        (
            "system.md",
            "loopd-shim: cannot read the system prompt {path}: a FIFO, not a regular file",
        ),
        ("loopd.toml", "loopd-shim: cannot read {path}: a FIFO, not a regular file"),
    ],
)
def test_a_fifo_in_the_settings_is_one_line_without_waiting(folders, name, said):
    settings, home = folders
    path = settings / name
    path.unlink()
    os.mkfifo(path)
    assert without_waiting(lambda: check(settings, home), path) == [said.format(path=path)]


@pytest.mark.parametrize(
    "name, data, said",
    [
        ("soul.md", b"x" * 4_001, "memoryd: the soul.md starter {path} is over soul.md's limit"),
        ("soul.md", b"\xff", "memoryd: the soul.md starter {path} is not valid UTF-8 (byte 0)"),
        ("system.md", b"x" * 70_000, "loopd-shim: the system prompt {path} is larger than 65,536"),
    ],
    ids=["soul over its limit", "soul not UTF-8", "system.md too large"],
)
def test_a_file_the_roles_would_refuse_is_a_mistake(folders, name, data, said):
    settings, home = folders
    path = settings / name
    path.write_bytes(data)
    [line] = check(settings, home)
    assert line.startswith(said.format(path=path)), line


def test_a_role_file_that_is_a_folder_is_said_to_be_one(folders):
    settings, home = folders
    path = settings / "brokerd.toml"
    path.unlink()
    path.mkdir()
    assert check(settings, home) == [f"brokerd-shim: cannot read {path}: a folder, not a file"]


def test_an_empty_max_class_is_a_mistake(folders):
    settings, home = folders
    path = settings / "memoryd.toml"
    path.write_text(path.read_text().replace('max_class = "private"', 'max_class = ""'))
    assert 'max_class = ""' in path.read_text()
    [line] = check(settings, home)
    assert "[index] max_class must be one of" in line


@pytest.mark.parametrize("name", ["memoryd.toml", "loopd.toml", "brokerd.toml"])
def test_settings_saved_with_a_byte_order_mark_and_crlf_are_read_as_written(folders, name):
    """An editor that starts the file with a UTF-8 byte-order mark and ends lines with CRLF
    (Notepad) wrote the same settings; the mark is invisible, so refusing it would name a
    mistake the owner cannot see."""
    settings, home = folders
    path = settings / name
    text = path.read_text()
    path.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode("utf-8"))
    assert check(settings, home) == []
    path.write_bytes(b"\xef\xbb\xbf" + b"[paths]\r\nhome = 3\r\n")
    [line] = check(settings, home)
    assert str(path) in line and "home" in line, line


def test_a_grant_saved_with_a_byte_order_mark_is_read_as_written(folders):
    settings, home = folders
    grant = next(p for p in sorted((home / "grants").iterdir()) if p.suffix == ".toml")
    grant.write_bytes(b"\xef\xbb\xbf" + grant.read_bytes())
    assert check(settings, home) == []
