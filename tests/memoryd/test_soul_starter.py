"""The starter soul.md is read as every settings file is, and only a starter memoryd could serve is
copied into a new home: a FIFO is refused without waiting, and so is one that is not UTF-8 or is
over soul.md's limit (copied, it would refuse every session's memory block). Also the [index]
max_class key: a value that is not one of the class names is refused, not taken as the default."""

import os

import pytest

from memoryd.config import SOUL_STARTER_BYTES, load
from memoryd.errors import ConfigError, StartFailed
from memoryd.home import Home
from memoryd.memory import block
from memoryd.memory.store import MemoryStore
from tests.proto.nowait import without_waiting


def store_with(tmp_path, starter):
    return MemoryStore(Home(tmp_path / "home"), soul_starter=starter)


@pytest.mark.parametrize(
    "data",
    [
        b"You are careful.\n",
        "é".encode() * 4_000,
        b"\xef\xbb\xbf" + b"\n" * 50 + b"x" * 4_000 + b"\r\n" * 50,  # BOM and blank lines trimmed
    ],
    ids=["short", "4000 two-byte characters", "at the limit once trimmed"],
)
def test_a_starter_memoryd_can_serve_is_copied(tmp_path, data):
    starter = tmp_path / "soul.md"
    starter.write_bytes(data)
    store_with(tmp_path, starter).ensure()
    assert (tmp_path / "home/memory/soul.md").read_bytes() == data
    block.build(Home(tmp_path / "home"))


@pytest.mark.parametrize(
    "data, said",
    [
        (b"x" * 4_001, "is over soul.md's limit: 4,001 of 4,000 characters"),
        ("é".encode() * 4_001, "is over soul.md's limit: 4,001 of 4,000 characters"),
        (b"You are \xff careful.", "is not valid UTF-8 (byte 8)"),
        (b" " * (SOUL_STARTER_BYTES + 1), "cannot be read (larger than 65,536 bytes)"),
    ],
    ids=["over the limit", "over in characters", "not UTF-8", "too large to read"],
)
def test_a_starter_memoryd_could_never_serve_refuses_the_start(tmp_path, data, said):
    starter = tmp_path / "soul.md"
    starter.write_bytes(data)
    with pytest.raises(StartFailed) as refused:
        store_with(tmp_path, starter).ensure()
    assert str(refused.value) == f"the soul.md starter {starter} {said}"
    assert not (tmp_path / "home/memory/soul.md").exists()


def test_a_fifo_starter_refuses_the_start_without_waiting(tmp_path):
    fifo = tmp_path / "soul.md"
    os.mkfifo(fifo)
    with pytest.raises(StartFailed, match="cannot be read \\(a FIFO, not a regular file\\)$"):
        without_waiting(store_with(tmp_path, fifo).ensure, fifo)
    assert not (tmp_path / "home/memory/soul.md").exists()


def test_an_existing_soul_md_is_kept_whatever_the_starter(tmp_path):
    store_with(tmp_path, None).home.memory.mkdir(parents=True)
    (tmp_path / "home/memory/soul.md").write_text("mine\n")
    fifo = tmp_path / "soul.md"
    os.mkfifo(fifo)
    without_waiting(store_with(tmp_path, fifo).ensure, fifo)
    assert (tmp_path / "home/memory/soul.md").read_text() == "mine\n"


@pytest.mark.parametrize("value", ['""', "false", "0", "{}", "[]", '"Private"'])
def test_a_max_class_that_is_not_a_class_name_is_refused(tmp_path, value):
    path = tmp_path / "memoryd.toml"
    path.write_text(f"[index]\nmax_class = {value}\n")
    with pytest.raises(ConfigError, match=r"\[index\] max_class must be one of public, private"):
        load(path)


def test_an_absent_max_class_is_private(tmp_path):
    path = tmp_path / "memoryd.toml"
    path.write_text("[index]\n")
    assert load(path).max_class == "private"
