"""The witness reads a session's log ahead of the writer (witness.py, brokercalls.py): a long
first read of one session's log holds up no other session's write, calls of one session share one
read, and a read that outlasts the call's deadline is answered "not applied", nothing written."""

import asyncio
import json
import threading
import time

from memoryd.brokercalls import NOT_APPLIED
from memoryd.config import load
from memoryd.server import prepare
from memoryd.trust.witness import Witness
from proto.messages import MemoryCall, ToolRequest
from proto.records import ToolResultRecord, UserRecord, append_session_record
from tests.memoryd.test_scheduling import _config

T = "2026-09-20T14:02:11Z"
SLOW, QUICK = "s-slowlog", "s-quicklog"


def _log(home, session, records):
    folder = home / "sessions" / session
    folder.mkdir(parents=True, exist_ok=True)
    for record in records:
        append_session_record(folder / "0.jsonl", record)


def _note(session: str, text: str, call_id: str = "c1") -> MemoryCall:
    arguments = json.dumps({"action": "note", "text": text})
    request = ToolRequest(session=session, call_id=call_id, tool="memory", arguments=arguments)
    return MemoryCall(request=request, taint="private", untrusted=False)


def _journal(home) -> list[dict]:
    return [
        json.loads(line)
        for path in sorted((home / "memory/edits").glob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]


def _slow_first_read(monkeypatch, session: str, release: threading.Event, entered: threading.Event):
    """The first read of session's log waits for release (as a read of a huge log would)."""
    real = Witness._read_from
    reads: list[tuple[str, int]] = []

    def read_from(f, start, seen, path):
        reads.append((path.parent.name, start))
        if reads.count((session, 0)) == 1 and reads[-1] == (session, 0):
            entered.set()
            release.wait(20)
        return real(f, start, seen, path)

    monkeypatch.setattr(Witness, "_read_from", staticmethod(read_from))
    return reads


def test_a_long_read_of_one_log_holds_up_no_other_session(tmp_path, monkeypatch):
    home = tmp_path / "home"
    _log(home, SLOW, [UserRecord(time=T, content="hello")])
    _log(home, QUICK, [UserRecord(time=T, content="hello")])
    service = prepare(load(_config(tmp_path)))
    release, entered = threading.Event(), threading.Event()
    _slow_first_read(monkeypatch, SLOW, release, entered)

    async def scenario():
        slow = asyncio.ensure_future(service.on_broker(_note(SLOW, "Slow kestrel.")))
        await asyncio.to_thread(entered.wait, 10)
        started = time.monotonic()
        quick = await service.on_broker(_note(QUICK, "Quick heron."))
        quick_seconds = time.monotonic() - started
        slow_done_first = slow.done()
        release.set()
        return quick, quick_seconds, slow_done_first, await slow

    try:
        quick, quick_seconds, slow_done_first, slow = asyncio.run(scenario())
    finally:
        release.set()
        service.close()
    assert quick.ok and quick.output == "noted" and quick_seconds < 5
    assert not slow_done_first
    assert slow.ok and slow.output == "noted"
    assert [line["session"] for line in _journal(home)] == [QUICK, SLOW]


def test_calls_of_one_session_share_one_read_and_the_log_still_counts(tmp_path, monkeypatch):
    home = tmp_path / "home"
    _log(
        home,
        SLOW,
        [
            ToolResultRecord(
                time=T,
                call_id="c",
                name="http_fetch",
                output="page",
                klass="private",
                untrusted=True,
            )
        ],
    )
    service = prepare(load(_config(tmp_path)))
    release, entered = threading.Event(), threading.Event()
    reads = _slow_first_read(monkeypatch, SLOW, release, entered)
    add = json.dumps({"action": "add", "file": "memory", "text": "Kestrels nest on the roof."})

    async def scenario():
        calls = [
            asyncio.ensure_future(service.on_broker(_note(SLOW, f"Note {n}.", f"c{n}")))
            for n in range(3)
        ]
        request = ToolRequest(session=SLOW, call_id="c9", tool="memory", arguments=add)
        calls.append(
            asyncio.ensure_future(
                service.on_broker(MemoryCall(request=request, taint="private", untrusted=False))
            )
        )
        await asyncio.to_thread(entered.wait, 10)
        await asyncio.sleep(0.2)
        release.set()
        return await asyncio.gather(*calls)

    try:
        replies = asyncio.run(scenario())
    finally:
        release.set()
        service.close()
    assert [r.ok for r in replies] == [True] * 4
    # One whole read for the first call; the calls that came during it share one more read,
    # from where that read stopped (the end of the log), not from its start; the writer reads none.
    size = (home / "sessions" / SLOW / "0.jsonl").stat().st_size
    assert reads[0] == (SLOW, 0) and set(reads[1:]) <= {(SLOW, size)} and len(reads) <= 2
    # brokerd said clean, the log says untrusted: the add became a note, as the witness wants.
    assert replies[3].output.startswith("saved as a note (untrusted)")
    assert "Kestrels" not in (home / "memory/memory.md").read_text()


def test_a_read_past_the_deadline_is_not_applied_and_writes_nothing(tmp_path, monkeypatch):
    home = tmp_path / "home"
    _log(home, SLOW, [UserRecord(time=T, content="hello")])
    service = prepare(load(_config(tmp_path)))
    service.write_deadline = 0.3
    release, entered = threading.Event(), threading.Event()
    _slow_first_read(monkeypatch, SLOW, release, entered)
    try:
        started = time.monotonic()
        reply = asyncio.run(service.on_broker(_note(SLOW, "Too late.")))
        seconds = time.monotonic() - started
    finally:
        release.set()
        service.close()
    assert not reply.ok and reply.output == NOT_APPLIED
    assert seconds < 5
    assert _journal(home) == []
    assert "Too late." not in (home / "memory/notes.md").read_text()
