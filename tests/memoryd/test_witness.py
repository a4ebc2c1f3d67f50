"""memoryd's own witness: the session's log, read to its end, makes brokerd's
word stricter, never looser; an unusable log fails closed for identity writes."""

import asyncio
import errno
import json
import logging
import os
import socket
import tempfile
import threading
import time
from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.brokercalls import NOT_APPLIED
from memoryd.config import load
from memoryd.home import Home
from memoryd.server import prepare
from memoryd.trust import logscan
from memoryd.trust import witness as witness_module
from memoryd.trust.witness import Witness
from proto.labels import CLASS_RANK, CLASSES
from proto.messages import MemoryCall, ToolRequest
from proto.records import ToolResultRecord, UserRecord, append_session_record, record_json

from .test_service import memoryd, write_log  # noqa: F401  (the fixture)
from .test_witness_ahead import _journal

T = "2026-09-20T14:02:11Z"
SESSION = "mm-witness01"


def result(klass="private", untrusted=False, output="page"):
    return ToolResultRecord(
        time=T, call_id="c", name="http_fetch", output=output, klass=klass, untrusted=untrusted
    )


def user(text="hello"):
    return UserRecord(time=T, content=text)


@pytest.fixture
def home(tmp_path):
    return Home(tmp_path / "home")


def test_a_clean_log_leaves_brokerds_state(home):
    write_log(home.root, SESSION, [user(), result("public"), result("private")])
    assert Witness(home).stricter(SESSION, "private", False) == ("private", False)
    assert Witness(home).stricter(SESSION, "public", False) == ("private", False)


def test_the_log_makes_brokerds_state_stricter(home):
    write_log(home.root, SESSION, [user(), result("private", untrusted=True), result("secret")])
    assert Witness(home).stricter(SESSION, "public", False) == ("secret", True)


def test_no_log_means_brokerds_word_stands(home):
    assert Witness(home).stricter(SESSION, "public", False) == ("public", False)


def test_only_what_is_new_is_read_and_a_half_written_line_waits(home, monkeypatch):
    witness = Witness(home)
    write_log(home.root, SESSION, [user()] * 200)
    assert witness.stricter(SESSION, "private", False) == ("private", False)
    path = home.session_log(SESSION)
    read_from = []
    real = Witness._read_from

    def spy(f, start, seen, p):
        read_from.append(start)
        return real(f, start, seen, p)

    monkeypatch.setattr(Witness, "_read_from", staticmethod(spy))
    size = path.stat().st_size
    with open(path, "ab") as f:
        f.write(b'{"type":"tool_result","time":"2026-09-20T14:02:11Z","call_id":"c",')
    assert witness.stricter(SESSION, "private", False) == ("private", False)
    with open(path, "ab") as f:
        f.write(b'"name":"x","output":"o","class":"private","untrusted":true}\n')
    assert witness.stricter(SESSION, "private", False) == ("private", True)
    assert read_from == [size, size]


def test_a_replaced_or_shrunk_log_is_read_whole_and_taint_never_drops(home):
    witness = Witness(home)
    write_log(home.root, SESSION, [user(), result(untrusted=True)])
    assert witness.stricter(SESSION, "private", False) == ("private", True)
    path = home.session_log(SESSION)
    path.unlink()
    write_log(home.root, SESSION, [user(), user(), user(), result("secret")])
    assert witness.stricter(SESSION, "private", False) == ("secret", True)
    path.unlink()
    assert witness.stricter(SESSION, "private", False) == ("secret", True)


def test_a_log_rewritten_in_place_before_the_offset_is_read_again(home):
    witness = Witness(home)
    write_log(home.root, SESSION, [user("a" * 50), user("b" * 50)])
    assert witness.stricter(SESSION, "private", False) == ("private", False)
    path = home.session_log(SESSION)
    lines = path.read_bytes().splitlines(keepends=True)
    tainted = result(untrusted=True, output="x")

    replacement = (record_json(tainted) + "\n").encode()
    replacement = replacement.ljust(len(lines[1]) - 1, b" ")[: len(lines[1]) - 1] + b"\n"
    with open(path, "r+b") as f:  # same inode, same size, other bytes
        f.seek(len(lines[0]))
        f.write(replacement)
    assert witness.stricter(SESSION, "private", False) == ("private", True)


@pytest.mark.parametrize("how", ["symlinked log", "symlinked folder", "unreadable", "damaged"])
def test_an_unusable_log_fails_closed_with_a_log_line(home, tmp_path, how, caplog):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    append_session_record(elsewhere / "0.jsonl", user())
    folder = home.sessions / SESSION
    if how == "symlinked folder":
        home.sessions.mkdir(parents=True)
        folder.symlink_to(elsewhere)
    else:
        folder.mkdir(parents=True)
        if how == "symlinked log":
            (folder / "0.jsonl").symlink_to(elsewhere / "0.jsonl")
        elif how == "unreadable":
            os.mkdir(folder / "0.jsonl")  # a folder where the log should be cannot be read
        else:
            (folder / "0.jsonl").write_bytes(b'{"type":"tool_result","oops":1}\n')
    with caplog.at_level(logging.WARNING, logger="memoryd.trust.witness"):
        assert Witness(home).stricter(SESSION, "private", False) == ("private", True)
    [line] = [r.getMessage() for r in caplog.records]
    assert SESSION in line and "treated as untrusted" in line


def test_memoryd_alone_stops_the_identity_write(memoryd):  # noqa: F811
    """brokerd says public and clean; the session's log shows a page it fetched."""
    write_log(memoryd.home, "mm-fetched01", [user(), result("public", untrusted=True)])
    memory_md = memoryd.home / "memory" / "memory.md"
    before = memory_md.read_bytes()
    added = memoryd.call(
        "memory",
        {"action": "add", "file": "memory", "text": "the page says: trust example.org"},
        session="mm-fetched01",
        taint="public",
        untrusted=False,
    )
    assert added.ok and added.output.startswith("saved as a note (untrusted)")
    assert memory_md.read_bytes() == before
    for call in (
        {"action": "remove", "file": "user", "old": "x"},
        {"action": "replace", "file": "memory", "old": "x", "text": "y"},
    ):
        reply = memoryd.call(
            "memory", call, session="mm-fetched01", taint="public", untrusted=False
        )
        assert reply.ok is False and "has read untrusted content" in reply.output
    assert memory_md.read_bytes() == before
    # A clean session with a clean log writes as before.
    write_log(memoryd.home, "mm-cleanlog1", [user(), result("private")])
    clean = memoryd.call(
        "memory",
        {"action": "add", "file": "memory", "text": "Owner likes UTC."},
        session="mm-cleanlog1",
    )
    assert clean.ok and clean.output.startswith("memory.md updated")


# --- long lines, any chunking: the verdict is what the records say -------------------------------
def _escaped(text: str) -> str:
    """text as a JSON string with every character a \\u escape (what a writer may legally do)."""
    return (
        '"'
        + "".join(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else json.dumps(c)[1:-1] for c in text)
        + '"'
    )


_tool_records = st.fixed_dictionaries(
    {
        "class": st.sampled_from(CLASSES),
        "untrusted": st.booleans(),
        "output": st.text(max_size=40).map(lambda s: s * 7),
        "order": st.permutations(
            ["type", "time", "call_id", "name", "output", "class", "untrusted"]
        ),
        "escape": st.booleans(),
    }
)
_lines = st.lists(
    st.one_of(
        _tool_records,
        st.text(max_size=300).map(lambda s: ("user", s)),
        st.sampled_from(
            [
                b'{"type":"tool_result","output":"x","class":"public"}\n',  # no untrusted
                b'{"type":"tool_result","class":"top","untrusted":false}\n',
                b'{"type":"tool_result","output":"cut off\n',
                b'["tool_result"]\n',
                b'{"type":"tool_result","untrusted":"no","class":"public"}\n',
            ]
        ),
    ),
    max_size=8,
)


def _line(item) -> tuple[bytes, tuple[str, bool] | None, bool]:
    """(the line, its label if it is a tool result, whether it is damaged)."""
    if isinstance(item, bytes):
        return item, None, True
    if isinstance(item, tuple):
        return (record_json(user(item[1])) + "\n").encode(), None, False
    values = {
        "type": "tool_result", "time": T, "call_id": "c", "name": "http_fetch",
        "output": item["output"], "class": item["class"], "untrusted": item["untrusted"],
    }  # fmt: skip
    members = []
    for key in item["order"]:
        value = values[key]
        if item["escape"]:
            text = _escaped(value) if isinstance(value, str) else json.dumps(value)
            members.append(f"{_escaped(key)}:{text}")
        else:
            members.append(f"{json.dumps(key)}:{json.dumps(value, ensure_ascii=False)}")
    line = ("{" + ",".join(members) + "}\n").encode()
    assert json.loads(line) == values  # the oracle: the line says what values says
    return line, (item["class"], item["untrusted"]), False


@settings(max_examples=150, deadline=None)
@given(_lines, st.integers(1, 64), st.integers(0, 200), st.floats(0, 1))
def test_any_log_read_in_any_pieces_gives_what_its_records_say(items, chunk, short, cut):
    """Chunks and the long-line threshold made tiny, so labels straddle chunks and most lines
    are read as long ones; the log is also read in two goes, cut anywhere."""
    lines = [_line(item) for item in items]
    data = b"".join(line for line, _, _ in lines)
    klass = higher_class_of([label[0] for _, label, _ in lines if label] or ["public"])
    untrusted = any(label[1] for _, label, _ in lines if label)
    damaged = any(bad for _, _, bad in lines)
    with tempfile.TemporaryDirectory() as folder:
        home = Home(Path(folder))
        path = home.session_log(SESSION)
        path.parent.mkdir(parents=True)
        witness = Witness(home)
        at = int(len(data) * cut)
        with patch.object(logscan, "CHUNK", chunk), patch.object(logscan, "SHORT_LINE", short):
            path.write_bytes(data[:at])
            first = witness.judge(SESSION)
            with open(path, "ab") as f:
                f.write(data[at:])
            verdict = witness.judge(SESSION)
    assert CLASS_RANK[verdict.klass] >= CLASS_RANK[first.klass]
    assert verdict.untrusted >= first.untrusted
    if damaged:
        assert verdict.untrusted and CLASS_RANK[verdict.klass] >= CLASS_RANK[klass]
    else:
        assert (verdict.klass, verdict.untrusted) == (klass, untrusted)


def higher_class_of(classes: list[str]) -> str:
    return max(classes, key=CLASS_RANK.__getitem__)


@pytest.mark.parametrize("after", [True, False])
@pytest.mark.parametrize("output_mib", [1, 9])
def test_a_long_line_is_judged_by_its_label_wherever_it_stands(home, after, output_mib):
    """A tool result of megabytes, its label after or before the output, among short lines."""
    output = ('{"k": "v\\\\", "n": [1, 2]} ' * (output_mib << 15))[: output_mib << 20]
    line = result("secret", untrusted=True, output=output)
    values = json.loads(record_json(line))
    order = (
        ["type", "output", "class", "untrusted"]
        if after
        else ["class", "untrusted", "type", "output"]
    )
    body = {key: values[key] for key in order}
    write_log(home.root, SESSION, [user(), result("public")])
    with open(home.session_log(SESSION), "ab") as f:
        f.write((json.dumps(body) + "\n").encode())
    witness = Witness(home)
    assert witness.stricter(SESSION, "public", False) == ("secret", True)


def _judge_within(witness: Witness, seconds: float):
    """The verdict, judged on a thread: a witness that blocks fails the test, not hangs it."""
    verdicts = []
    thread = threading.Thread(target=lambda: verdicts.append(witness.judge(SESSION)), daemon=True)
    thread.start()
    thread.join(seconds)
    assert verdicts, f"the witness did not answer within {seconds} s"
    return verdicts[0]


@pytest.mark.parametrize(
    "kind", ["fifo", "socket", "folder", "symlink to a fifo", "dangling symlink"]
)
def test_a_log_that_is_not_a_regular_file_is_untrusted_at_once(home, tmp_path, kind, caplog):
    folder = home.sessions / SESSION
    folder.mkdir(parents=True)
    path = folder / "0.jsonl"
    held = None
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        held = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        held.bind(str(path))
        held.listen()
    elif kind == "folder":
        path.mkdir()
    elif kind == "symlink to a fifo":
        os.mkfifo(tmp_path / "fifo")
        path.symlink_to(tmp_path / "fifo")
    else:
        path.symlink_to(tmp_path / "nothing-here")
    witness = Witness(home)
    try:
        with caplog.at_level(logging.WARNING, logger="memoryd.trust.witness"):
            verdict = _judge_within(witness, 10)
    finally:
        if held is not None:
            held.close()
    assert verdict.untrusted and verdict.problem
    assert witness.apply(SESSION, verdict, "private", False) == ("private", True)
    [line] = [r.getMessage() for r in caplog.records]
    assert SESSION in line and "treated as untrusted" in line
    # Untrusted it stays, whatever the log becomes.
    os.unlink(path) if not path.is_dir() or path.is_symlink() else path.rmdir()
    write_log(home.root, SESSION, [user()])
    assert witness.stricter(SESSION, "private", False) == ("private", True)


# --- in memoryd: one session's read never delays another's call ---------------------------------
def _note_call(session: str, text: str, call_id: str = "c1", action: str = "note") -> MemoryCall:
    args = {"action": "note", "text": text} if action == "note" else {
        "action": "add", "file": "memory", "text": text
    }  # fmt: skip
    request = ToolRequest(
        session=session, call_id=call_id, tool="memory", arguments=json.dumps(args)
    )
    return MemoryCall(request=request, taint="private", untrusted=False)


def _hold_reads(monkeypatch, sessions: set[str], release: threading.Event):
    """Reads of these sessions' logs wait for release (or memoryd's stop), as reads of huge
    logs would; returns the sessions whose reads are under way."""
    real = Witness._read_from
    under_way: list[str] = []

    def read_from(f, start, seen, path):
        session = path.parent.name
        if session in sessions:
            under_way.append(session)
            while not release.is_set() and not f.stopping():
                time.sleep(0.01)
        return real(f, start, seen, path)

    monkeypatch.setattr(Witness, "_read_from", staticmethod(read_from))
    return under_way


def _service(tmp_path):
    (tmp_path / "soul.md").write_text("A careful agent.\n")
    config = tmp_path / "memoryd.toml"
    config.write_text(f'[paths]\nhome = "{tmp_path / "home"}"\n')
    return prepare(load(config))


async def _until(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "not reached in time"
        await asyncio.sleep(0.01)


def test_two_sessions_reading_huge_logs_leave_a_third_call_prompt(tmp_path, monkeypatch):
    home = tmp_path / "home"
    huge = ["s-huge1", "s-huge2", "s-huge3"]
    for session in huge:
        write_log(home, session, [user(), result("secret", untrusted=True)])
    write_log(home, "s-small", [user(), result("private")])
    service = _service(tmp_path)
    release = threading.Event()
    under_way = _hold_reads(monkeypatch, set(huge), release)

    async def scenario():
        held = [asyncio.ensure_future(service.on_broker(_note_call(s, "Held."))) for s in huge]
        await _until(lambda: sorted(under_way) == huge)
        started = time.monotonic()
        quick = [
            await service.on_broker(_note_call("s-nolog", "No log here.")),
            await service.on_broker(_note_call("s-small", "Small log.", action="add")),
        ]
        waited = time.monotonic() - started
        still_held = [not h.done() for h in held]
        release.set()
        return quick, waited, still_held, await asyncio.gather(*held)

    try:
        quick, waited, still_held, held = asyncio.run(scenario())
    finally:
        release.set()
        service.close()
    assert [q.ok for q in quick] == [True, True] and quick[0].output == "noted"
    assert quick[1].output.startswith("memory.md updated")  # the small log is clean: applied
    assert still_held == [True, True, True] and waited < 5  # generous: it is milliseconds
    # Their logs, once read, count: brokerd said clean, the logs say untrusted.
    assert [(h.ok, h.output) for h in held] == [(True, "noted (untrusted)")] * 3
    assert [line["session"] for line in _journal(home)][:2] == ["s-nolog", "s-small"]


def test_a_call_is_judged_by_a_read_that_began_after_it_arrived(tmp_path, monkeypatch):
    """A call that comes while its session's log is being read waits for the next read: the
    record the session read meanwhile counts for it."""
    home = tmp_path / "home"
    write_log(home, "s-busy", [user()])
    service = _service(tmp_path)
    real = Witness._read_from
    done_reading, release = threading.Event(), threading.Event()

    def read_from(f, start, seen, path):
        found = real(f, start, seen, path)
        if not done_reading.is_set():  # the first read has reached the end: hold its verdict
            done_reading.set()
            release.wait(20)
        return found

    monkeypatch.setattr(Witness, "_read_from", staticmethod(read_from))

    async def scenario():
        first = asyncio.ensure_future(
            service.on_broker(_note_call("s-busy", "Before.", "c1", action="add"))
        )
        await asyncio.to_thread(done_reading.wait, 10)
        append_session_record(home / "sessions/s-busy/0.jsonl", result("public", untrusted=True))
        second = asyncio.ensure_future(
            service.on_broker(_note_call("s-busy", "After.", "c2", action="add"))
        )
        await asyncio.sleep(0.2)
        release.set()
        return await first, await second

    try:
        first, second = asyncio.run(scenario())
    finally:
        release.set()
        service.close()
    assert first.ok and first.output.startswith("memory.md updated")
    assert second.ok and second.output.startswith("saved as a note (untrusted)")
    assert "After." not in (home / "memory/memory.md").read_text()


def test_a_read_under_way_when_memoryd_stops_is_answered_not_applied(tmp_path, monkeypatch):
    home = tmp_path / "home"
    write_log(home, "s-huge1", [user()])
    service = _service(tmp_path)
    release = threading.Event()
    under_way = _hold_reads(monkeypatch, {"s-huge1"}, release)

    async def scenario():
        call = asyncio.ensure_future(service.on_broker(_note_call("s-huge1", "Stopped.")))
        await _until(lambda: under_way == ["s-huge1"])
        started = time.monotonic()
        await asyncio.to_thread(service.witness.close)
        return await call, time.monotonic() - started

    try:
        reply, seconds = asyncio.run(scenario())
    finally:
        release.set()
        service.close()
    assert not reply.ok and reply.output == NOT_APPLIED and seconds < 5
    assert _journal(home) == []


@pytest.mark.parametrize(
    "extra",
    [
        [1] * 700_000,  # 1.4 MB of structure: more than the indexer takes either
        ["s" * 300] * 10_000,  # 3 MB of short strings, each kept whole: more than HELD_LIMIT
    ],
    ids=["structure", "many strings"],
)
def test_a_long_line_too_large_to_keep_small_is_damage_so_untrusted(home, extra, caplog):
    body = json.loads(record_json(result("public")))
    body["extra"] = extra  # before the label: the line cannot be judged without holding it
    body = {k: body[k] for k in ["type", "extra", "output", "class", "untrusted", "time"]}
    write_log(home.root, SESSION, [user()])
    with open(home.session_log(SESSION), "ab") as f:
        f.write((json.dumps(body) + "\n").encode())
    with caplog.at_level(logging.WARNING, logger="memoryd.trust.witness"):
        assert Witness(home).stricter(SESSION, "public", False) == ("public", True)
    assert "is damaged" in caplog.text


def test_no_thread_for_a_read_answers_not_applied_and_the_next_call_reads(tmp_path, monkeypatch):
    home = tmp_path / "home"
    write_log(home, "s-nothread", [user(), result("public", untrusted=True)])
    service = _service(tmp_path)
    real_start = threading.Thread.start

    def no_thread(thread):
        if thread.name == "memoryd-witness":
            raise RuntimeError("can't start new thread")
        real_start(thread)

    try:
        with patch.object(threading.Thread, "start", no_thread):
            refused = asyncio.run(service.on_broker(_note_call("s-nothread", "No thread.")))
        later = asyncio.run(service.on_broker(_note_call("s-nothread", "A thread.", "c2")))
    finally:
        service.close()
    assert not refused.ok and refused.output == NOT_APPLIED
    assert later.ok and later.output == "noted (untrusted)"
    assert [line["call"] for line in _journal(home)] == ["c2"]


def test_an_open_that_fails_for_want_of_descriptors_is_untrusted_for_that_call_only(
    home, monkeypatch
):
    write_log(home.root, SESSION, [user(), result("private")])
    witness = Witness(home)
    real_open = witness_module.open_file

    def out_of_descriptors(path, flags):
        raise OSError(errno.EMFILE, "Too many open files", str(path))

    monkeypatch.setattr(witness_module, "open_file", out_of_descriptors)
    assert witness.stricter(SESSION, "public", False) == ("public", True)
    monkeypatch.setattr(witness_module, "open_file", real_open)
    assert witness.stricter(SESSION, "public", False) == ("private", False)
