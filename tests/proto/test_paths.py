"""Every role takes its default sockets from proto.paths, the design's table."""

from pathlib import Path

from brokerd_shim.config import load_config as broker_config
from bxctl.common import default_socket
from loopd_shim.config import load_config as loop_config
from memoryd import config as memoryd_config
from proto.health import CHECKS
from proto.paths import (
    BROKER_MEMORY_SOCKET,
    LOOP_BROKER_SOCKET,
    LOOP_CONTROL_SOCKET,
    LOOP_MEMORY_SOCKET,
    OWNER_ADMIN_SOCKET,
    SOCKETS,
    under,
)


def test_the_table_is_the_designs():
    assert [str(s) for s in SOCKETS] == [
        "run/loop-memory/memory.sock",
        "run/broker-memory/memory.sock",
        "run/owner-memory/admin.sock",
        "run/loop-broker/broker.sock",
        "run/loop-control/control.sock",
    ]


def test_every_role_defaults_to_the_table(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("BOXMAKER_HOME", str(home))
    monkeypatch.setenv("BOXMAKER_SYSTEM_PROMPT", str(tmp_path / "system.md"))
    memoryd = memoryd_config.load(None)
    assert (memoryd.loop_socket, memoryd.broker_socket, memoryd.admin_socket) == (
        under(home, LOOP_MEMORY_SOCKET),
        under(home, BROKER_MEMORY_SOCKET),
        under(home, OWNER_ADMIN_SOCKET),
    )
    broker = broker_config(None)
    assert (broker.broker_socket, broker.memory_socket) == (
        under(home, LOOP_BROKER_SOCKET),
        under(home, BROKER_MEMORY_SOCKET),
    )
    loop = loop_config(None)
    assert (loop.memory_socket, loop.broker_socket, loop.control_socket) == (
        under(home, LOOP_MEMORY_SOCKET),
        under(home, LOOP_BROKER_SOCKET),
        under(home, LOOP_CONTROL_SOCKET),
    )
    assert default_socket() == under(home, OWNER_ADMIN_SOCKET)
    assert {role: Path(relative) for role, (relative, _) in CHECKS.items()} == {
        "memoryd": Path(LOOP_MEMORY_SOCKET),
        "brokerd-shim": Path(LOOP_BROKER_SOCKET),
        "loopd-shim": Path(LOOP_CONTROL_SOCKET),
    }


def test_scripts_stack_lists_the_same_sockets():
    """scripts/stack is bash and runs before any venv exists, so it spells the table out: it must
    spell the same one."""
    import re

    text = (Path(__file__).resolve().parents[2] / "scripts" / "stack").read_text()
    listed = re.search(r"^SOCKETS=\(([^)]*)\)", text, re.MULTILINE)
    assert listed is not None
    assert listed.group(1).split() == [str(s) for s in SOCKETS]
