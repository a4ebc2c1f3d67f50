"""serve_unix's bounds: a cap per socket, a deadline for the request and for the
reply, no reply over MAX_FRAME, bounded refusals and log lines, and a client that retries a
refused connect briefly."""

import asyncio
import logging
import resource
import socket
import threading
import time

import msgpack
import pytest

from proto.answer import KindRefused
from proto.client import RemoteError, request
from proto.errors import InvalidMessage, Unreachable
from proto.escape import for_log
from proto.fdbudget import fit_caps
from proto.frames import MAX_FRAME, encode_frame
from proto.logline import one_line
from proto.messages import MemoryAdmin, MemoryAdminReply, parse_body
from proto.server import serve_unix
from tests.rawsocket import exchange


async def handler(message):
    if message.arg == "huge":
        return MemoryAdminReply(text="x" * (MAX_FRAME + 10))
    if message.arg == "big":
        return MemoryAdminReply(text="y" * 900_000)
    return MemoryAdminReply(text=f"{message.command} {message.arg}")


class Served:
    def __init__(self, path, **limits):
        self.loop = asyncio.new_event_loop()
        self.server = self.loop.run_until_complete(
            serve_unix(path, handler, {"memory_admin"}, name="test", **limits)
        )
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def open_connections(self) -> int:
        return self.server.open_connections

    def close(self):
        async def shut() -> None:
            self.server.close()
            await asyncio.wait_for(self.server.wait_closed(), 5)

        asyncio.run_coroutine_threadsafe(shut(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@pytest.fixture
def serve(tmp_path):
    made = []

    def go(**limits):
        path = str(tmp_path / f"s{len(made)}" / "admin.sock")
        made.append(Served(path, **limits))
        return path, made[-1]

    yield go
    for served in made:
        served.close()


def test_a_reply_over_max_frame_is_a_short_error_and_a_log_line(serve, caplog):
    path, _ = serve()
    with caplog.at_level(logging.ERROR, logger="proto.server"):
        with pytest.raises(RemoteError, match="too large to send"):
            request(path, MemoryAdmin(command="log", arg="huge"))
    assert any("was not sent" in r.getMessage() for r in caplog.records)
    assert request(path, MemoryAdmin(command="log", arg="1")).text == "log 1"


def test_a_peer_that_does_not_read_its_reply_is_cut(serve, caplog):
    path, served = serve(reply_timeout=0.3)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(path)
    with caplog.at_level(logging.INFO, logger="proto.server"):
        s.sendall(encode_frame("memory_admin", {"command": "log", "arg": "big"}))
        deadline = time.monotonic() + 5
        while not served.open_connections() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        assert served.open_connections() == 1  # the reply waits for the peer
        while served.open_connections() and time.monotonic() < deadline:
            time.sleep(0.05)
    assert served.open_connections() == 0
    assert any("did not read" in r.getMessage() for r in caplog.records)
    s.close()


def test_a_large_reply_read_slowly_within_the_deadline_arrives_whole(serve):
    path, _ = serve(reply_timeout=5)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(path)
    s.sendall(encode_frame("memory_admin", {"command": "log", "arg": "big"}))
    time.sleep(0.5)
    got = b""
    s.settimeout(5)
    while chunk := s.recv(8192):
        got += chunk
        time.sleep(0.0005)
    s.close()
    assert len(got) == 4 + int.from_bytes(got[:4], "big") > 900_000


def test_connections_over_the_cap_wait_until_one_ends(serve):
    path, served = serve(max_connections=2, request_timeout=30)
    held = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(2)]
    for s in held:
        s.connect(path)
    deadline = time.monotonic() + 5
    while served.open_connections() < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    extra = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    extra.settimeout(0.5)
    extra.connect(path)
    extra.sendall(encode_frame("memory_admin", {"command": "log", "arg": "4"}))
    with pytest.raises(TimeoutError):
        extra.recv(10)
    assert served.open_connections() == 2
    held.pop().close()
    extra.settimeout(5)
    assert extra.recv(100)
    extra.close()
    for s in held:
        s.close()
    deadline = time.monotonic() + 5
    while served.open_connections() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert request(path, MemoryAdmin(command="log", arg="2")).text == "log 2"


def test_a_slow_sender_is_cut_and_told(serve):
    path, _ = serve(request_timeout=0.3)
    frame = encode_frame("memory_admin", {"command": "log", "arg": "1"})
    began = time.monotonic()
    kind, body = exchange(path, frame[:5], close_write=False, timeout=5)
    assert kind == "error" and "not complete in time" in body["text"]
    assert time.monotonic() - began < 3


def bad_frame(extra_keys) -> bytes:
    body = {"command": "log", "arg": "1", **{key: 1 for key in extra_keys}}
    payload = msgpack.packb({"kind": "memory_admin", "body": body}, use_bin_type=True)
    return len(payload).to_bytes(4, "big") + payload


def test_a_body_of_90000_keys_is_refused_before_it_is_built(serve, caplog):
    path, _ = serve()
    frame = bad_frame(f"\x1b\n{n}" for n in range(90_000))
    assert len(frame) > 600_000
    with caplog.at_level(logging.INFO, logger="proto.server"):
        began = time.monotonic()
        kind, reply = exchange(path, frame, timeout=30)
        spent = time.monotonic() - began
    assert kind == "error" and len(reply["text"]) < 300
    assert "map over 256 keys" in reply["text"]
    assert spent < 2.0
    lines = [r.getMessage() for r in caplog.records]
    assert all("\n" not in line and "\x1b" not in line and len(line) < 2000 for line in lines)


def test_unknown_keys_are_named_few_and_counted(serve, caplog):
    path, _ = serve()
    forged = "\x1b[2J\nmemoryd: ERROR forged"
    frame = bad_frame([forged, *(f"k{n}" for n in range(249))])
    with caplog.at_level(logging.INFO, logger="proto.server"):
        kind, reply = exchange(path, frame, timeout=30)
    assert kind == "error" and "245 more problems" in reply["text"]
    assert len(reply["text"]) < 400
    lines = [r.getMessage() for r in caplog.records]
    assert any("forged" in line for line in lines)
    assert all("\n" not in line and "\x1b" not in line for line in lines)


def test_the_client_retries_a_refused_connect_briefly(tmp_path):
    path = str(tmp_path / "late" / "admin.sock")
    (tmp_path / "late").mkdir()
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)  # bound, not listening: a connect is refused
    served = []

    def start_later():
        time.sleep(0.3)
        stale.close()
        served.append(Served(path))

    starter = threading.Thread(target=start_later)
    starter.start()
    try:
        assert request(path, MemoryAdmin(command="log", arg="3")).text == "log 3"
    finally:
        starter.join()
        for s in served:
            s.close()


def test_the_client_retries_a_full_listen_queue(serve):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2048:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    path, served = serve(max_connections=1, request_timeout=30)
    held = []
    try:
        full = False
        for _ in range(3000):  # the cap, then the listen queue, then EAGAIN
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect(path)
            except BlockingIOError:
                s.close()
                full = True
                break
            held.append(s)
        assert full, "the listen queue never filled"

        def release():
            time.sleep(0.2)
            for s in held:
                s.close()

        releaser = threading.Thread(target=release)
        releaser.start()
        assert request(path, MemoryAdmin(command="log", arg="5"), timeout=30).text == "log 5"
        releaser.join()
    finally:
        for s in held:
            s.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_client_gives_up_on_a_refused_socket_within_about_a_second(tmp_path):
    path = str(tmp_path / "admin.sock")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)
    began = time.monotonic()
    with pytest.raises(Unreachable):
        request(path, MemoryAdmin(command="log", arg="1"))
    assert 0.5 < time.monotonic() - began < 3
    stale.close()


# --- pure parts -----------------------------------------------------------------------------


def test_for_log_escapes_and_bounds():
    forged = "\x1b[2J\nmemoryd: ERROR forged\\x0a"
    shown = for_log(forged)
    assert "\n" not in shown and "\x1b" not in shown
    assert shown.startswith("\\x1b[2J\\x0amemoryd")
    assert for_log("z" * 5000, limit=100).endswith("(4900 more characters)")


def test_one_line_keeps_a_log_line_one_line():
    assert one_line("a\nb\u2028c\x1bd\te") == "a\\x0ab\\u{2028}c\\x1bd\\x09e"
    assert one_line("é ✓ 漢") == "é ✓ 漢"
    assert len(one_line("x" * 10_000)) < 4100


def test_unknown_keys_are_counted_not_listed():
    body = {"command": "log", "arg": "1", **{f"extra{n}": n for n in range(50_000)}}
    with pytest.raises(InvalidMessage) as e:
        parse_body("memory_admin", body)
    assert len(str(e.value)) < 400 and "49995 more problems" in str(e.value)


def test_a_long_list_of_bad_items_stops_at_the_first():
    body = {"session": "s1", "tool_calls": [{"id": 1}] * 50_000}
    with pytest.raises(InvalidMessage) as e:
        parse_body("assistant_message", body)
    assert len(str(e.value)) < 400


def test_kind_refused_is_a_proto_error():
    from proto.answer import decode_request

    payload = msgpack.packb({"kind": "reindex", "body": {}})
    with pytest.raises(KindRefused, match="not served on this socket"):
        decode_request(payload, {"memory_admin"})


@pytest.mark.parametrize(
    "wanted,limit,expected",
    [
        ({"a": 256, "b": 256, "c": 64}, 1024, {"a": 256, "b": 256, "c": 64}),
        ({"a": 256, "b": 256, "c": 64}, 256, {"a": 56, "b": 56, "c": 14}),
        ({"a": 256, "b": 256, "c": 64}, 10, {"a": 1, "b": 1, "c": 1}),
    ],
)
def test_caps_fit_under_the_descriptor_limit(wanted, limit, expected):
    assert fit_caps(wanted, limit) == expected


def test_lines_about_bad_peers_are_throttled(caplog):
    from proto.answer import LINES_PER_WINDOW, Throttle

    throttle = Throttle()
    with caplog.at_level(logging.INFO, logger="proto.server"):
        for _ in range(LINES_PER_WINDOW * 50):
            throttle.info("loopd", "slow", "%s: dropped a slow request")
        throttle.info("owner", "slow", "%s: dropped a slow request")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == LINES_PER_WINDOW + 1
    assert lines[-1] == "owner: dropped a slow request"
