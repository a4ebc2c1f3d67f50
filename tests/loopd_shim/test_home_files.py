"""loopd-shim's own files: a session log or baseline that is a symbolic link or a FIFO is refused in
one line (never followed out of the home, never waited on), system.md is read bounded, and serve
that cannot make its home or its socket says so in one line, exit 2."""

import asyncio
import contextlib
import dataclasses
import os
import time

import pytest
from typer.testing import CliRunner

from loopd_shim.cli import app
from loopd_shim.config import SYSTEM_PROMPT_BYTES, read_system_prompt
from loopd_shim.errors import ConfigError
from loopd_shim.server import serve
from loopd_shim.sessions import SessionStore, cut_partial_tail
from proto.client import RemoteError
from proto.files import NotRegular
from proto.messages import AssistantMessage, OwnerMessage, SessionStart
from tests.loopd_shim.conftest import SYSTEM_MD
from tests.proto.nowait import without_waiting

OUTSIDE = b"first line of a file outside the home\nits second line, with no newline at the end"


@pytest.fixture
def outside(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(OUTSIDE)
    return path


def test_cut_partial_tail_refuses_a_link_and_leaves_its_target_whole(tmp_path, outside):
    log = tmp_path / "0.jsonl"
    log.symlink_to(outside)
    with pytest.raises(NotRegular, match="symbolic link"):
        cut_partial_tail(log)
    assert outside.read_bytes() == OUTSIDE


def test_cut_partial_tail_refuses_a_fifo(tmp_path):
    fifo = tmp_path / "0.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(NotRegular, match="a FIFO"):
        without_waiting(lambda: cut_partial_tail(fifo), fifo)


def swap(log, how, outside):
    log.unlink()
    if how == "link":
        log.symlink_to(outside)
    else:
        os.mkfifo(log)


@pytest.mark.parametrize(
    "how, said",
    [("link", "a symbolic link, which is not followed"), ("fifo", "a FIFO, not a regular file")],
)
@pytest.mark.parametrize(
    "message",
    [
        lambda s: OwnerMessage(session=s, content="hello"),
        lambda s: AssistantMessage(session=s, content="hello"),
    ],
    ids=["owner", "assistant"],
)
def test_a_swapped_session_log_is_refused_in_one_line(stack, outside, how, said, message):
    stack.ask(SessionStart(session="s-swapped"))
    log = stack.config.sessions / "s-swapped" / "0.jsonl"
    swap(log, how, outside)
    with pytest.raises(RemoteError) as refused:
        stack.ask(message("s-swapped"))
    turn = "; the turn was not recorded" if isinstance(message("s"), AssistantMessage) else ""
    assert str(refused.value) == f"session s-swapped: cannot append to {log}: {said}{turn}"
    assert outside.read_bytes() == OUTSIDE


@pytest.mark.parametrize("how", ["link", "fifo"])
def test_a_swapped_baseline_is_refused(home, outside, how):
    store = SessionStore(home / "sessions")
    store.create("s-b", "system", [])
    path = store.baseline_path("s-b")
    swap(path, how, outside)
    with pytest.raises(NotRegular):
        without_waiting(lambda: store.baseline("s-b"), path)


def test_a_fifo_system_md_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "system.md"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError) as refused:
        without_waiting(lambda: read_system_prompt(fifo), fifo)
    assert str(refused.value) == f"cannot read the system prompt {fifo}: a FIFO, not a regular file"


def test_a_system_md_at_its_limit_reads_and_one_byte_more_is_refused(tmp_path):
    path = tmp_path / "system.md"
    path.write_bytes(b"x" * SYSTEM_PROMPT_BYTES)
    assert len(read_system_prompt(path)) == SYSTEM_PROMPT_BYTES
    path.write_bytes(b"x" * (SYSTEM_PROMPT_BYTES + 1))
    with pytest.raises(ConfigError, match="is larger than 65,536 bytes, the limit; shorten it$"):
        read_system_prompt(path)


@contextlib.contextmanager
def serving(fakes, config):
    """loopd-shim serving config beside the fakes, until the block ends."""
    stop = asyncio.Event()
    future = asyncio.run_coroutine_threadsafe(serve(config, stop), fakes.background.loop)
    try:
        for _ in range(500):
            if config.control_socket.exists() or future.done():
                break
            time.sleep(0.01)
        if future.done():
            future.result()
        yield
    finally:
        fakes.background.loop.call_soon_threadsafe(stop.set)
        future.result(5)


def test_an_oversized_system_md_refuses_serve(fakes, tmp_path):
    system = tmp_path / "system.md"
    system.write_bytes(b"You are a careful agent. " * 60_000)
    config = dataclasses.replace(fakes.config, system_prompt=system)
    with pytest.raises(ConfigError, match="larger than"), serving(fakes, config):
        pass
    assert not config.control_socket.exists()


def test_a_system_md_grown_too_large_refuses_the_session_and_leaves_nothing(fakes, tmp_path):
    system = tmp_path / "system.md"
    system.write_bytes(SYSTEM_MD.read_bytes())
    config = dataclasses.replace(fakes.config, system_prompt=system)
    with serving(fakes, config):
        fakes.ask(SessionStart(session="s-before"))
        system.write_bytes(b"You are a careful agent. " * 60_000)
        with pytest.raises(RemoteError, match=f"the system prompt {system} is larger than"):
            fakes.ask(SessionStart(session="s-after"))
    assert sorted(os.listdir(config.sessions)) == ["s-before"]


def write_config(tmp_path, text):
    (tmp_path / "system.md").write_text("You are a test.\n")
    config = tmp_path / "loopd.toml"
    config.write_text(text)
    return config


@pytest.mark.parametrize(
    "text, said",
    [
        ('[paths]\nhome = "{tmp}/file/home"\n', "cannot prepare {tmp}/file/home: Not a directory"),
        (
            '[paths]\nhome = "{tmp}/home"\n[control]\nsocket = "{tmp}/{long}/c.sock"\n',
            "cannot listen on {tmp}/{long}/c.sock: AF_UNIX path too long",
        ),
    ],
    ids=["home", "socket"],
)
def test_serve_that_cannot_make_its_home_or_socket_is_one_line_exit_2(tmp_path, text, said):
    (tmp_path / "file").write_text("x")
    fill = {"tmp": tmp_path, "long": "y" * 120}
    config = write_config(tmp_path, text.format(**fill))
    result = CliRunner().invoke(app, ["serve", "--config", str(config)])
    assert result.exit_code == 2, result.output
    assert result.stderr == f"loopd-shim: {said.format(**fill)}\n"
    assert isinstance(result.exception, SystemExit)


def test_the_stop_removes_its_own_socket_and_leaves_a_file_put_in_its_place(fakes):
    config = fakes.config
    with serving(fakes, config):
        assert config.control_socket.exists()
    assert not config.control_socket.exists()  # its own socket goes at the stop
    with serving(fakes, config):
        config.control_socket.unlink()
        config.control_socket.write_text("someone else's\n")
    assert config.control_socket.read_text() == "someone else's\n"
    config.control_socket.unlink()


def test_a_baseline_nested_too_deep_is_one_line_naming_it(tmp_path):
    home = tmp_path / "home"
    folder = home / "sessions" / "s-deep"
    folder.mkdir(parents=True)
    (folder / "0.baseline.json").write_text("[" * 200_000 + "]" * 200_000)
    result = CliRunner().invoke(app, ["baseline", "s-deep", "--home", str(home)])
    assert result.exit_code == 1
    said = result.output.strip()
    assert "\n" not in said and "0.baseline.json is not a baseline" in said
    assert "Traceback" not in said and "Recursion" not in said
