"""serve_unix and the clients: one request per connection, errors answered, server goes on."""

import asyncio
import logging
import os
import socket
import stat
import struct

import msgpack
import pytest

from proto.client import RemoteError, arequest, request
from proto.errors import FrameTooLarge, ProtoError, UnexpectedReply, Unreachable
from proto.frames import MAX_FRAME
from proto.messages import (
    MemoryAdmin,
    MemoryAdminReply,
    MemoryBlock,
    MemoryBlockReply,
    SessionUpdated,
)
from proto.server import SocketInUse, prepare_socket_path, serve_unix
from tests.rawsocket import exchange as raw_exchange


class Refused(Exception):
    pass


async def handler(message):
    if isinstance(message, MemoryAdmin):
        if message.arg == "refuse":
            raise Refused("refused on purpose")
        if message.arg == "crash":
            raise RuntimeError("secret traceback detail")
        return MemoryAdminReply(text=f"{message.command} {message.arg}")
    raise Refused("unexpected")


@pytest.fixture
def server(tmp_path):
    path = str(tmp_path / "run" / "owner" / "admin.sock")
    loop = asyncio.new_event_loop()
    srv = loop.run_until_complete(
        serve_unix(
            path, handler, {"memory_admin"}, name="test", request_timeout=0.3, answerable=(Refused,)
        )
    )
    import threading

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield path
    loop.call_soon_threadsafe(srv.close)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


def test_modes(server):
    assert stat.S_IMODE(os.stat(server).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(server)).st_mode) == 0o700


def test_request_reply(server):
    assert request(server, MemoryAdmin(command="log", arg="3")) == MemoryAdminReply(text="log 3")


def test_async_request(server):
    reply = asyncio.run(arequest(server, MemoryAdmin(command="undo", arg="x")))
    assert reply.text == "undo x"


def test_request_of_a_reply_type(server):
    message = MemoryAdmin(command="log", arg="3")
    reply = request(server, message, reply=MemoryAdminReply)
    assert type(reply) is MemoryAdminReply and reply.text == "log 3"
    reply = asyncio.run(arequest(server, message, reply=MemoryAdminReply))
    assert type(reply) is MemoryAdminReply and reply.text == "log 3"


def test_reply_of_another_kind_is_unexpected(server):
    message = MemoryAdmin(command="log", arg="3")
    with pytest.raises(
        UnexpectedReply, match="answered memory_admin_reply, not memory_block_reply"
    ):
        request(server, message, reply=MemoryBlockReply)
    with pytest.raises(UnexpectedReply, match="not memory_block_reply"):
        asyncio.run(arequest(server, message, reply=MemoryBlockReply))
    # An error reply stays a RemoteError, whatever the reply type asked for.
    with pytest.raises(RemoteError, match="refused on purpose"):
        request(server, MemoryAdmin(command="log", arg="refuse"), reply=MemoryBlockReply)


def test_answerable_error_text_reaches_peer(server):
    with pytest.raises(RemoteError, match="refused on purpose"):
        request(server, MemoryAdmin(command="log", arg="refuse"))


def test_other_errors_hide_details(server):
    with pytest.raises(RemoteError) as e:
        request(server, MemoryAdmin(command="log", arg="crash"))
    assert "secret" not in str(e.value) and "Traceback" not in str(e.value)


def test_kind_not_served_here(server):
    with pytest.raises(RemoteError, match="not served on this socket"):
        request(server, MemoryBlock())


@pytest.mark.parametrize(
    "data,expect",
    [
        (struct.pack(">I", MAX_FRAME + 1), "outside"),
        (struct.pack(">I", 0), "outside"),
        (struct.pack(">I", 3) + b"\xc1\xc1\xc1", "MessagePack"),
        (struct.pack(">I", 4) + msgpack.packb([1, 2, 3]), "not a map"),
        (struct.pack(">I", 1) + msgpack.packb({}), "exactly the keys"),
    ],
)
def test_bad_frames_answered(server, data, expect):
    kind, body = raw_exchange(server, data)
    assert kind == "error" and expect in body["text"]
    assert request(server, MemoryAdmin(command="log", arg="1")).text == "log 1"


def test_invalid_body_names_field(server):
    payload = msgpack.packb({"kind": "memory_admin", "body": {"command": "nuke", "arg": ""}})
    kind, body = raw_exchange(server, struct.pack(">I", len(payload)) + payload)
    assert kind == "error" and "command" in body["text"]


def test_slow_client_dropped_with_error(server):
    kind, body = raw_exchange(server, struct.pack(">I", 50) + b"abc", close_write=False)
    assert kind == "error" and "in time" in body["text"]


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (struct.pack(">I", 50) + b"abc", "frame cut short: 3 of its 50 bytes arrived"),
        (struct.pack(">I", MAX_FRAME), "frame cut short: 0 of its 1,048,576 bytes arrived"),
        (b"\x00\x00", "frame cut short: 2 of the 4 bytes of its length arrived"),
    ],
)
def test_a_frame_cut_short_is_answered_with_an_error_and_the_server_goes_on(server, data, said):
    """A peer that shuts its sending side part way through a frame, still reading, is told what
    was wrong (design 2: an error reply where the socket still allows one)."""
    assert raw_exchange(server, data) == ("error", {"text": said})
    assert request(server, MemoryAdmin(command="log", arg="2")).text == "log 2"


def test_a_peer_gone_both_ways_or_before_a_byte_gets_nothing_and_the_server_goes_on(server, caplog):
    assert raw_exchange(server, b"") is None
    for data in (struct.pack(">I", 50) + b"abc", b"\x00"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(server)
        sock.sendall(data)
        sock.close()  # nobody left to read the error: its write fails quietly
    assert request(server, MemoryAdmin(command="log", arg="3")).text == "log 3"
    served = [r for r in caplog.records if r.name.startswith("proto")]
    assert [r.getMessage() for r in served if r.levelno >= logging.WARNING] == []


def test_unreachable(tmp_path):
    with pytest.raises(Unreachable):
        request(tmp_path / "nothing.sock", MemoryBlock())
    with pytest.raises(Unreachable):
        asyncio.run(arequest(tmp_path / "nothing.sock", MemoryBlock()))


def test_client_refuses_oversized_request(server):
    with pytest.raises(FrameTooLarge):
        request(server, SessionUpdated.model_construct(session="a" * (MAX_FRAME + 10)))


def test_stale_socket_removed_live_refused(tmp_path, server):
    with pytest.raises(SocketInUse):
        prepare_socket_path(server)
    stale = str(tmp_path / "stale" / "x.sock")
    os.makedirs(os.path.dirname(stale))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(stale)
    s.close()
    prepare_socket_path(stale)
    assert not os.path.exists(stale)
    regular = tmp_path / "stale" / "file"
    regular.write_text("x")
    with pytest.raises(SocketInUse):
        prepare_socket_path(str(regular))


def test_a_live_socket_whose_listen_queue_is_full_is_refused_and_kept(tmp_path):
    # The probe's connect fails at once (EAGAIN) on a live server too busy to accept: that is
    # no dead server, and its socket must stay where its peers find it.
    path = str(tmp_path / "busy.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(0)
    held = []
    try:
        while len(held) < 64:
            peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            peer.setblocking(False)
            try:
                peer.connect(path)
            except BlockingIOError:
                peer.close()
                break
            held.append(peer)
        before = os.lstat(path).st_ino
        with pytest.raises(SocketInUse) as refused:
            prepare_socket_path(path)
        assert str(refused.value) == (
            f"{path} did not answer a probe (Resource temporarily unavailable): a live process"
            " may serve it with its queue full; if no process serves it, remove it"
        )
        assert os.lstat(path).st_ino == before
    finally:
        for peer in held:
            peer.close()
        listener.close()


def test_errors_share_one_base():
    assert issubclass(SocketInUse, ProtoError) and issubclass(RemoteError, ProtoError)
    assert issubclass(UnexpectedReply, ProtoError)
