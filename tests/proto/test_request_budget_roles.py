"""Every role served through proto.server (memoryd, brokerd-shim, loopd-shim) holds at most its
process's budget of requests still arriving, whichever of its sockets the peers use: past it a
large request is refused in one line, while a small one is answered at once."""

import time

import pytest

from loopd_shim.server import CONTROL_REQUESTS
from proto.bytebudget import REQUEST_BUDGET, SMALL_FRAME, WAIT_SECONDS
from proto.frames import MAX_FRAME
from tests.integration.stack import CONFIG_OF, ProcessStack, short_temp_home
from tests.proto.slowframes import Partial, garbage
from tests.rawsocket import exchange

# Each role's sockets (the stack's names); the slow peers are spread over all of them.
ROLES = {
    "memoryd": ["loop-memory", "broker-memory", "owner-memory"],
    "brokerd-shim": ["loop-broker"],
    "loopd-shim": ["loop-control"],
}
# The bytes of requests still arriving each role holds: the process's budget, but loopd-shim's
# control socket has its own, smaller one (its connections also hold turns and replies).
BUDGET = {
    "memoryd": REQUEST_BUDGET,
    "brokerd-shim": REQUEST_BUDGET,
    "loopd-shim": CONTROL_REQUESTS.total,
}


@pytest.fixture(scope="module")
def stack():
    made = ProcessStack(short_temp_home("bx-budget-"))
    try:
        # Long enough that no slow peer is cut while a test runs (the shims' deadline is 10 s).
        memoryd_toml = made.configs / CONFIG_OF["memoryd"]
        memoryd_toml.write_text(memoryd_toml.read_text() + "\n[limits]\nrequest_seconds = 30.0\n")
        made.start()
        made.wait_ready()
        yield made
    finally:
        made.stop()


@pytest.mark.parametrize("role", sorted(ROLES))
def test_a_role_holds_no_more_than_its_budget_of_slow_requests(stack, role):
    paths = [stack.socket_paths()[name] for name in ROLES[role]]
    slow = Partial()
    try:
        filling = BUDGET[role] // MAX_FRAME  # slow 1 MiB requests that take the whole budget
        for n in range(filling):  # each sendall ends only once its request was let in and read
            slow.open(paths[n % len(paths)], part=512 * 1024)

        began = time.monotonic()
        kind, body = exchange(paths[-1], garbage(MAX_FRAME, 1000), close_write=False, timeout=20)
        assert kind == "error" and "too many large requests" in body["text"], body
        assert WAIT_SECONDS - 0.5 < time.monotonic() - began < WAIT_SECONDS + 5

        for path in paths:
            began = time.monotonic()
            kind, body = exchange(path, garbage(SMALL_FRAME, SMALL_FRAME), timeout=20)
            assert kind == "error" and "not valid MessagePack" in body["text"], body
            assert time.monotonic() - began < 1.0
    finally:
        slow.close()
    kind, body = exchange(paths[0], garbage(MAX_FRAME, MAX_FRAME), timeout=20)
    assert kind == "error" and "not valid MessagePack" in body["text"], body
