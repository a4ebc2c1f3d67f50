"""The five sockets' default places under {home}, as the design's table (section 3) names them.

Every role, the owner's CLI, memory-mcp and the health check take their defaults from here, so a
socket moves in one place. Each is relative to boxmaker's home; `under(home, ...)` makes it a path.
[sockets]/[memory]/[broker]/[control] socket keys in a role's TOML still override them.
"""

from pathlib import Path, PurePosixPath

# memoryd's three (spec 7): loopd's, brokerd's, and the owner's.
LOOP_MEMORY_SOCKET = PurePosixPath("run/loop-memory/memory.sock")
BROKER_MEMORY_SOCKET = PurePosixPath("run/broker-memory/memory.sock")
OWNER_ADMIN_SOCKET = PurePosixPath("run/owner-memory/admin.sock")
# brokerd-shim's, for loopd-shim.
LOOP_BROKER_SOCKET = PurePosixPath("run/loop-broker/broker.sock")
# loopd-shim's, for whoever plays the model.
LOOP_CONTROL_SOCKET = PurePosixPath("run/loop-control/control.sock")

SOCKETS = (
    LOOP_MEMORY_SOCKET,
    BROKER_MEMORY_SOCKET,
    OWNER_ADMIN_SOCKET,
    LOOP_BROKER_SOCKET,
    LOOP_CONTROL_SOCKET,
)


def under(home: Path, relative: PurePosixPath) -> Path:
    """relative (one of the sockets above) under home."""
    return Path(home) / relative
