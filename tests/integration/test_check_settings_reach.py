"""scripts/check_settings.py refuses settings the containers cannot honour, each in one line naming
the file, the key and what to do: a socket moved out of the folder of run/ that compose.yaml shares
with its peers and the host, a file or folder outside what the role's container sees, and a
memoryd write deadline not below brokerd-shim's memory timeout, nor that timeout below loopd-shim's
wait for brokerd-shim. A system prompt saved with a
byte-order mark is read without it.
"""

import os
import shutil
import sys

import pytest

from loopd_shim.config import read_system_prompt
from tests.integration.stack import REPO, make_settings

sys.path.insert(0, os.fspath(REPO / "scripts"))
from check_settings import check  # noqa: E402


@pytest.fixture(autouse=True)
def home_restored(monkeypatch):
    monkeypatch.setenv("BOXMAKER_HOME", "/var/lib/boxmaker")


@pytest.fixture
def folders(tmp_path):
    settings = make_settings(tmp_path)
    home = tmp_path / "home"
    shutil.copytree(REPO / "config/grants", home / "grants")
    return settings, home


def set_key(path, section, line):
    """line set in [section] of path (the section added when the file has none), in place of
    the example's own line for that key."""
    key = line.split("=")[0].strip()
    lines = [x for x in path.read_text().splitlines() if x.split("=")[0].strip() != key]
    header = f"[{section}]"
    if header in lines:
        lines.insert(lines.index(header) + 1, line)
    else:
        lines += [header, line]
    path.write_text("\n".join(lines) + "\n")


ELSEWHERE = [
    ("memoryd.toml", "sockets", 'admin = "/var/lib/boxmaker/run/admin2.sock"', "[sockets] admin"),
    ("memoryd.toml", "sockets", 'loop = "/tmp/loop.sock"', "[sockets] loop"),
    ("memoryd.toml", "sockets", 'broker = "memory.sock"', "[sockets] broker"),
    ("loopd.toml", "control", 'socket = "/var/lib/boxmaker/c.sock"', "[control] socket"),
    ("loopd.toml", "memory", 'socket = "/var/lib/boxmaker/run/x/m.sock"', "[memory] socket"),
    ("brokerd.toml", "broker", 'socket = "/run/broker.sock"', "[broker] socket"),
    ("loopd.toml", "prompt", f'system = "{REPO}/config/system.md"', "[prompt] system"),
    ("loopd.toml", "prompt", 'system = "../system.md"', "[prompt] system"),
    ("memoryd.toml", "memory", 'soul_starter = "/var/lib/boxmaker/grants/s.md"', "soul_starter"),
    ("brokerd.toml", "grants", 'dir = "/var/lib/boxmaker/memory"', "[grants] dir"),
]


@pytest.mark.parametrize("name, section, line, key", ELSEWHERE, ids=[e[2] for e in ELSEWHERE])
def test_a_socket_or_file_the_containers_cannot_reach_is_one_line(
    folders, name, section, line, key
):
    settings, home = folders
    set_key(settings / name, section, line)
    [said] = check(settings, home)
    assert f"{settings / name}: {key}" in said or f"{settings / name}: [" in said, said
    assert key in said and "\n" not in said, said


def test_a_socket_named_where_it_already_is_passes(folders):
    settings, home = folders
    set_key(
        settings / "memoryd.toml",
        "sockets",
        'admin = "/var/lib/boxmaker/run/owner-memory/admin.sock"',
    )
    set_key(settings / "loopd.toml", "prompt", 'system = "/etc/boxmaker/system.md"')
    assert check(settings, home) == []


@pytest.mark.parametrize(
    "deadline, timeout", [(60, 30), (30, 30), (20, 10), (5, 4.5), (2.5, 2.6), (25.5, 30)]
)
def test_a_write_deadline_not_below_brokerds_timeout_is_one_line(folders, deadline, timeout):
    settings, home = folders
    set_key(settings / "memoryd.toml", "memory", f"write_deadline = {deadline}")
    brokerd = settings / "brokerd.toml"
    brokerd.write_text(
        brokerd.read_text().replace("timeout_seconds = 30", f"timeout_seconds = {timeout}")
    )
    [said] = check(settings, home)
    assert "memoryd.toml [memory] write_deadline" in said, said
    assert "brokerd.toml [memory] timeout_seconds" in said, said


def test_a_write_deadline_below_brokerds_timeout_passes(folders):
    """Five seconds below, or more: what a write memoryd began may still take."""
    settings, home = folders
    set_key(settings / "memoryd.toml", "memory", "write_deadline = 25")
    assert check(settings, home) == []


@pytest.mark.parametrize("waits", [30, 34.5, 10])
def test_loopd_waiting_no_longer_than_brokerd_for_memoryd_is_one_line(folders, waits):
    """loopd-shim gives up on a tool call after its own timeout: at or under brokerd-shim's
    wait for memoryd (plus the margin), a memory write brokerd-shim still carries would be told
    to the model as unanswered."""
    settings, home = folders
    set_key(settings / "loopd.toml", "broker", f"timeout_seconds = {waits}")
    [said] = check(settings, home)
    assert said.startswith("loopd-shim and brokerd-shim: "), said
    assert "loopd.toml [broker] timeout_seconds" in said, said
    assert "brokerd.toml [memory] timeout_seconds = 30" in said, said


def test_raising_both_timeouts_in_step_passes(folders):
    settings, home = folders
    set_key(settings / "memoryd.toml", "memory", "write_deadline = 100")
    brokerd = settings / "brokerd.toml"
    brokerd.write_text(brokerd.read_text().replace("timeout_seconds = 30", "timeout_seconds = 110"))
    assert any(
        "loopd.toml sets no [broker] timeout_seconds" in said for said in check(settings, home)
    )
    set_key(settings / "loopd.toml", "broker", "timeout_seconds = 120")
    assert check(settings, home) == []


def test_a_byte_order_mark_is_not_part_of_the_system_prompt(tmp_path):
    prompt = tmp_path / "system.md"
    prompt.write_bytes(b"\xef\xbb\xbfYou are helpful.\n")
    assert read_system_prompt(prompt) == "You are helpful."


def test_loopds_wait_left_to_its_default_is_said_as_the_default_with_the_key_to_add(folders):
    """A settings folder from before loopd.toml had [broker] timeout_seconds (an upgrade keeps
    the owner's files): the line says the default is in force and what to add, not a line the
    file does not hold."""
    settings, home = folders
    brokerd = settings / "brokerd.toml"
    brokerd.write_text(brokerd.read_text().replace("timeout_seconds = 30", "timeout_seconds = 60"))
    [said] = check(settings, home)
    assert "loopd.toml sets no [broker] timeout_seconds (the default, 60, is in force)" in said
    assert said.endswith(
        "add timeout_seconds = 65 (or more) under [broker] in loopd.toml, or lower the one in "
        "brokerd.toml"
    ), said
