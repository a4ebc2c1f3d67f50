"""An owner's settings files (a role's config, system.md, the starter soul.md) are read whole and
bounded, through a symbolic link if there is one, but only when they end at a regular file: a FIFO
is refused at once, not waited on (a role would hang at its start), and so is a folder or device."""

import os

import pytest

from proto.config import CONFIG_BYTES, ConfigFile, ConfigInvalid
from proto.files import NotRegular, TooLarge, read_setting
from tests.proto.nowait import without_waiting


def test_a_regular_file_and_a_link_to_one_are_read(tmp_path):
    path = tmp_path / "system.md"
    path.write_bytes(b"You are a test.\n")
    (tmp_path / "link.md").symlink_to(path)
    assert read_setting(path, 100) == read_setting(tmp_path / "link.md", 100) == path.read_bytes()


@pytest.mark.parametrize("size, limit", [(0, 0), (10, 10), (70_000, 70_000)])
def test_a_file_at_its_limit_is_read_whole(tmp_path, size, limit):
    path = tmp_path / "f"
    path.write_bytes(b"x" * size)
    assert read_setting(path, limit) == b"x" * size


def test_a_file_over_its_limit_is_refused(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 11)
    with pytest.raises(TooLarge, match=r"f is larger than 10 bytes$"):
        read_setting(path, 10)


def test_a_fifo_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "memoryd.toml"
    os.mkfifo(fifo)
    with pytest.raises(NotRegular, match="a FIFO, not a regular file"):
        without_waiting(lambda: read_setting(fifo, 100), fifo)
    (tmp_path / "link.toml").symlink_to(fifo)
    with pytest.raises(NotRegular, match="a FIFO"):
        without_waiting(lambda: read_setting(tmp_path / "link.toml", 100), fifo)


@pytest.mark.parametrize(
    "make, said",
    [(lambda p: p.mkdir(), "a folder, not a file"), (None, "not a regular file")],
    ids=["folder", "device"],
)
def test_a_folder_or_a_device_is_refused(tmp_path, make, said):
    path = tmp_path / "x"
    if make is None:
        path.symlink_to("/dev/zero")  # would never end if read
    else:
        make(path)
    with pytest.raises(NotRegular, match=said):
        read_setting(path, 100)


def test_a_config_file_that_is_a_fifo_or_too_large_is_one_line(tmp_path):
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigInvalid) as refused:
        without_waiting(lambda: ConfigFile.load(fifo, {}), fifo)
    assert str(refused.value) == f"cannot read {fifo}: a FIFO, not a regular file"
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (CONFIG_BYTES + 1))
    with pytest.raises(ConfigInvalid, match=f"cannot read {big}: larger than "):
        ConfigFile.load(big, {})


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('[recall]\nmode = "spec"\nmodde = 1\n', "unknown key modde in [recall]"),
        ('[recall]\n"mode\\nerror: none" = 1\n', 'unknown key "mode\\nerror: none" in [recall]'),
        ('["recall\\u001b[2J"]\nx = 1\n', 'unknown section ["recall\\u001b[2J"]'),
        ('[recall]\n" mode" = 1\n', 'unknown key " mode" in [recall]'),
    ],
)
def test_an_unknown_name_is_said_on_one_line_as_the_file_spells_it(tmp_path, text, said):
    path = tmp_path / "role.toml"
    path.write_text(text)
    with pytest.raises(ConfigInvalid) as e:
        ConfigFile.load(path, {"recall": {"mode"}})
    assert str(e.value) == f"{path}: {said}"
    assert "\n" not in str(e.value) and "\x1b" not in str(e.value)
