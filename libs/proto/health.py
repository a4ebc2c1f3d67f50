"""A role's health check: one real request on one of its sockets, answered within a deadline.

    python -m proto.health ROLE [--home PATH] [--timeout SECONDS]

memoryd is asked for the memory block on its loopd socket (it reads its files to answer); each
shim gets a request of a kind its socket serves with a body it refuses (PROBE, as scripts/stack
status sends), which its event loop reads and answers with an error reply: no session, audit line
or file is touched, and no "wrong socket" line is logged, as a kind the socket does not serve
would be. A role that is stopped (SIGSTOP),
stuck or gone does not answer in time and is unhealthy. compose.yaml runs this in each container
and `scripts/stack status` runs it on the host or by exec. Prints one line; exit 0 healthy,
1 unhealthy.
"""

import argparse
import os
import sys
import time
from pathlib import Path

from proto.client import RemoteError, request, request_raw
from proto.config import default_home
from proto.errors import ProtoError, UnexpectedReply
from proto.messages import HEALTH_PROBE, MemoryBlock, MemoryBlockReply
from proto.paths import LOOP_BROKER_SOCKET, LOOP_CONTROL_SOCKET, LOOP_MEMORY_SOCKET, under

DEFAULT_TIMEOUT = 5.0

PROBE = HEALTH_PROBE
# role -> (socket under {home}, the kind a shim's socket serves: None for memoryd's block)
CHECKS = {
    "memoryd": (LOOP_MEMORY_SOCKET, None),
    "brokerd-shim": (LOOP_BROKER_SOCKET, "tool_request"),
    "loopd-shim": (LOOP_CONTROL_SOCKET, "owner_message"),
}


def check(role: str, home: Path, timeout: float = DEFAULT_TIMEOUT) -> tuple[bool, str]:
    """(healthy, one line saying why) for role's socket under home."""
    relative, served = CHECKS[role]
    path = under(home, relative)
    started = time.monotonic()
    try:
        if served is None:
            request(path, MemoryBlock(), timeout=timeout, reply=MemoryBlockReply)
        else:
            request_raw(path, served, PROBE, timeout=timeout)  # any reply is an answer
    except RemoteError as e:
        return False, f"{role}: unhealthy: {path} refused the memory block: {e}"
    except UnexpectedReply as e:
        return False, f"{role}: unhealthy: {path} answered {e.got}"
    except ProtoError as e:
        return False, f"{role}: unhealthy: {e}"
    took = (time.monotonic() - started) * 1000
    return True, f"{role}: healthy ({path} answered in {took:.0f} ms)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m proto.health", description=__doc__)
    parser.add_argument("role", choices=sorted(CHECKS))
    parser.add_argument("--home", type=Path, default=None, help="default: $BOXMAKER_HOME")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    args = parser.parse_args(argv)
    healthy, line = check(args.role, args.home or default_home(os.environ), args.timeout)
    print(line)
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
