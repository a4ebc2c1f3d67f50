"""Messages to one session are handled one at a time (a lock per session), and a lock is kept
only while a message holds or waits for it: a control-socket peer that names endless sessions
that do not exist must not grow loopd-shim."""

import asyncio

import pytest

from loopd_shim.errors import SessionUnknown
from loopd_shim.service import LoopService, SessionLocks
from loopd_shim.sessions import SessionStore
from proto.messages import OwnerMessage


def test_messages_for_unknown_sessions_leave_no_lock(tmp_path):
    service = LoopService(SessionStore(tmp_path / "sessions"), tmp_path / "system.md", None, None)

    async def many():
        for n in range(500):
            with pytest.raises(SessionUnknown):
                await service.owner_message(OwnerMessage(session=f"s-none{n}", content="hi"))

    asyncio.run(many())
    assert len(service._locks) == 0


def test_one_session_is_held_by_one_message_at_a_time_and_let_go_after():
    locks = SessionLocks()
    order: list[str] = []

    async def message(session: str, name: str, pause: float):
        async with locks.hold(session):
            order.append(f"{name} in")
            await asyncio.sleep(pause)
            order.append(f"{name} out")

    async def run():
        first = asyncio.create_task(message("s-a", "first", 0.05))
        await asyncio.sleep(0)
        second = asyncio.create_task(message("s-a", "second", 0))
        other = asyncio.create_task(message("s-b", "other", 0))
        await asyncio.sleep(0.01)
        assert len(locks) == 1  # s-a, held and waited for; s-b let go once done
        await asyncio.gather(first, second, other)

    asyncio.run(run())
    assert order.index("first out") < order.index("second in")  # never both in s-a at once
    assert order.index("other out") < order.index("first out")  # another session does not wait
    assert len(locks) == 0
