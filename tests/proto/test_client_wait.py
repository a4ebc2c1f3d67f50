"""The blocking client's wait is the whole answer's, not each read's: whatever the peer does
(silence, a byte at a time, a frame announced and never finished, an answer stopped after its
first bytes), request() ends within its timeout, and request_watched() keeps calling its watch()
until the whole answer is in, so that a peer stopped part way is found as one silent from the
start. A fake peer runs in a thread on a real Unix socket."""

import asyncio
import socket
import threading
import time

import pytest

from proto.client import arequest, request, request_raw, request_watched
from proto.errors import FrameTimeout
from proto.frames import encode_frame, recv_payload
from proto.messages import MemoryAdminReply, MemoryBlock, Reindex, Reindexed
from tests.fakepeer import ANNOUNCED, Peers, cut_after, ended_in, silent, trickling


@pytest.fixture
def peer(tmp_path):
    peers = Peers(tmp_path)
    yield peers.start
    peers.close()


REPLY = encode_frame("memory_block_reply", {"text": "the block"})


@pytest.mark.parametrize(
    "answer",
    [
        silent,
        trickling(0.1),
        cut_after(ANNOUNCED),
        cut_after(ANNOUNCED[:2]),
        cut_after(REPLY[:-1]),
    ],
    ids=["silence", "a-byte-at-a-time", "announced-never-sent", "half-a-header", "all-but-one"],
)
def test_a_request_ends_within_its_timeout_whatever_the_peer_does(peer, answer):
    path = peer(answer)
    error, took = ended_in(lambda: request(path, MemoryBlock(), timeout=1.0), most=4.0)
    assert isinstance(error, FrameTimeout), error
    assert str(error) == f"no reply from {path} in 1 seconds"
    assert 0.9 < took < 2.0, took


def test_request_raw_ends_within_its_timeout_on_a_trickle(peer):
    path = peer(trickling(0.1))
    error, took = ended_in(lambda: request_raw(path, "memory_admin", {}, timeout=1.0), most=4.0)
    assert isinstance(error, FrameTimeout), error
    assert took < 2.0, took


def test_a_request_the_peer_never_reads_ends_within_its_timeout(peer):
    path = peer(lambda conn, stop: stop.wait())  # accepts, reads nothing
    big = MemoryAdminReply(text="x" * 900_000)  # more than the socket holds unread
    error, took = ended_in(lambda: request(path, big, timeout=1.0), most=4.0)
    assert isinstance(error, FrameTimeout), error
    assert took < 2.0, took


def test_a_reply_sent_in_pieces_within_the_timeout_is_read_whole(peer):
    def pieces(conn: socket.socket, stop: threading.Event) -> None:
        conn.recv(65536)
        for i in range(0, len(REPLY), 7):
            conn.sendall(REPLY[i : i + 7])
            time.sleep(0.02)

    path = peer(pieces)
    reply = request(path, MemoryBlock(), timeout=5.0)
    assert reply.text == "the block"  # type: ignore[attr-defined]


class Stopped(Exception):
    pass


def watching(raise_at: int | None = None):
    """A watch() recording when it was called, raising Stopped at its raise_at-th call."""
    calls: list[float] = []

    def watch() -> None:
        calls.append(time.monotonic())
        if raise_at is not None and len(calls) >= raise_at:
            raise Stopped

    return watch, calls


@pytest.mark.parametrize(
    "part",
    [ANNOUNCED[:2], ANNOUNCED, encode_frame("reindexed", {})[:-1]],
    ids=["half-a-header", "announced-never-sent", "all-but-one"],
)
def test_a_watched_reply_stopped_part_way_is_found_by_the_watch(peer, part):
    path = peer(cut_after(part))
    watch, calls = watching(raise_at=3)
    started = time.monotonic()
    error, took = ended_in(
        lambda: request_watched(path, Reindex(), 60.0, reply=Reindexed, watch=watch, every=0.1),
        most=5.0,
    )
    assert isinstance(error, Stopped), error
    assert len(calls) == 3
    assert calls[0] - started >= 0.09  # each `every` seconds, not at once
    assert took < 1.0, took


def test_a_watched_reply_that_trickles_is_watched_until_its_last_byte(peer):
    def slow(conn: socket.socket, stop: threading.Event) -> None:
        conn.recv(65536)
        frame = encode_frame("reindexed", {"logs": 1, "records": 2, "notes": 3})
        conn.sendall(frame[:1])
        for byte in frame[1:]:
            time.sleep(0.6 / len(frame))
            conn.sendall(bytes([byte]))

    path = peer(slow)
    watch, calls = watching()
    started = time.monotonic()
    reply = request_watched(path, Reindex(), 10.0, reply=Reindexed, watch=watch, every=0.1)
    ended = time.monotonic()
    assert (reply.logs, reply.records, reply.notes) == (1, 2, 3)
    assert len(calls) >= 3, calls  # the bytes coming did not end the watch
    assert all(started < c < ended for c in calls)


def test_a_watched_reply_that_trickles_past_its_timeout_ends_at_it(peer):
    path = peer(trickling(0.05))
    watch, calls = watching()
    error, took = ended_in(
        lambda: request_watched(path, Reindex(), 1.0, reply=Reindexed, watch=watch, every=0.2),
        most=4.0,
    )
    assert isinstance(error, FrameTimeout), error
    assert took < 2.0, took
    assert len(calls) >= 3, calls


def test_recv_payload_bounds_the_whole_frame_by_the_sockets_timeout():
    ours, theirs = socket.socketpair()
    stop = threading.Event()

    def trickle() -> None:
        theirs.sendall(ANNOUNCED)
        while not stop.wait(0.05):
            theirs.sendall(b"\x00")

    thread = threading.Thread(target=trickle, daemon=True)
    with ours, theirs:
        ours.settimeout(0.5)
        thread.start()
        error, took = ended_in(lambda: recv_payload(ours), most=3.0)
        stop.set()
        thread.join(5)
        assert isinstance(error, TimeoutError), error
        assert took < 1.0, took
        assert ours.gettimeout() == 0.5  # left as it was


def test_an_async_request_ends_within_its_timeout_on_a_trickle(peer):
    path = peer(trickling(0.1))

    def call() -> None:
        asyncio.run(arequest(path, MemoryBlock(), timeout=1.0))

    error, took = ended_in(call, most=4.0)
    assert isinstance(error, FrameTimeout), error
    assert took < 2.0, took
