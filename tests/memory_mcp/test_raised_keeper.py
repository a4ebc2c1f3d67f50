"""Keeping a connection's raised state (raised.Keeper): answers that need it at once take turns and
are all kept, none withheld for the other's sake; a keeping stalled past the bound is not doubled
by another thread, and the answers meanwhile are told why they cannot be kept."""

import time

import anyio

from memory_mcp import raised
from proto.labels import Label

UNTRUSTED = Label(klass="private", untrusted=True)


def test_answers_kept_at_once_take_turns_and_are_all_kept(tmp_path, monkeypatch):
    real = raised.raise_kept

    def slow(*args):
        time.sleep(0.2)  # a slow disk, well within the bound
        return real(*args)

    monkeypatch.setattr(raised, "raise_kept", slow)
    keeper = raised.Keeper(timeout=5)
    path = tmp_path / "state" / "desk.json"
    said: list = []

    async def body():
        async with anyio.create_task_group() as tasks:
            for label in (UNTRUSTED, UNTRUSTED, Label(klass="secret", untrusted=True)):
                tasks.start_soon(lambda lab=label: _keep(keeper, path, lab, said))

    anyio.run(body)
    assert said == [None, None, None]
    found = raised.load(path)
    assert found is not None and found.label == Label(klass="secret", untrusted=True)


async def _keep(keeper, path, label, said) -> None:
    said.append(await keeper.keep(path, label, "mcp-desk"))


def test_a_stalled_keeping_is_not_doubled_and_is_said(tmp_path, monkeypatch):
    threads: list = []

    def stalled(*args):
        threads.append(args)
        time.sleep(2.5)  # an fsync on a disk that does not answer
        return True

    monkeypatch.setattr(raised, "raise_kept", stalled)
    keeper = raised.Keeper(timeout=0.5)
    path = tmp_path / "desk.json"

    async def body():
        first = await keeper.keep(path, UNTRUSTED, "mcp-desk")
        second = await keeper.keep(path, UNTRUSTED, "mcp-desk")
        return first, second

    started = time.monotonic()
    first, second = anyio.run(body)
    assert time.monotonic() - started < 2.2
    assert first == f"{tmp_path} did not answer in 0.5 seconds"
    assert second is not None and "has not ended" in second
    assert len(threads) == 1


def test_a_label_kept_again_after_trust_again_raises_the_state_again(tmp_path):
    """One connection keeps a tainted hit, the owner runs trust-again (the file made clean), and the
    same connection answers another tainted hit: the kept state is raised again, so the client's
    other registration and its next connections see it."""
    keeper = raised.Keeper(timeout=5)
    path = tmp_path / "state" / "desk.json"

    async def keep() -> str | None:
        return await keeper.keep(path, UNTRUSTED, "mcp-desk")

    assert anyio.run(keep) is None
    assert raised.forget(path) is True  # the owner's trust-again
    found = raised.load(path)
    assert found is not None and found.label == raised.CLEAN
    assert anyio.run(keep) is None
    found = raised.load(path)
    assert found is not None and found.label == UNTRUSTED and found.session == "mcp-desk"
