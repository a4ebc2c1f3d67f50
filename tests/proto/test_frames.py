"""Frames: round trips, and every way a frame can be wrong."""

import asyncio
import struct

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proto.errors import FrameMalformed, FrameTimeout, FrameTooLarge, PeerClosed, ProtoError
from proto.frames import MAX_FRAME, decode_payload, encode_frame, read_frame


def feed(data: bytes, eof: bool = True) -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    if eof:
        reader.feed_eof()
    return reader


def read(data: bytes, eof: bool = True, timeout: float | None = 1.0):
    async def go():
        return await read_frame(feed(data, eof), timeout=timeout)

    return asyncio.run(go())


def test_round_trip():
    frame = encode_frame("memory_admin", {"command": "log", "arg": "5"})
    assert struct.unpack(">I", frame[:4])[0] == len(frame) - 4
    assert read(frame) == ("memory_admin", {"command": "log", "arg": "5"})


def test_strings_are_utf8_and_bytes_stay_bytes():
    frame = encode_frame("x", {"text": "§ é ✓", "raw": b"\x00\xff"})
    assert read(frame) == ("x", {"text": "§ é ✓", "raw": b"\x00\xff"})


@pytest.mark.parametrize("length", [0, MAX_FRAME + 1, 2**32 - 1])
def test_length_outside_limits_refused_before_payload(length):
    # Only the header is sent: the length must be refused without waiting for a payload.
    with pytest.raises(FrameTooLarge):
        read(struct.pack(">I", length), eof=False)


def test_largest_frame_accepted():
    body = {"text": ""}
    overhead = len(msgpack.packb({"kind": "k", "body": body}, use_bin_type=True))
    payload_text = "a" * (MAX_FRAME - overhead - 4)  # str header grows by 4 bytes (str32)
    frame = encode_frame("k", {"text": payload_text})
    assert len(frame) - 4 <= MAX_FRAME
    assert read(frame)[1]["text"] == payload_text


def test_encode_refuses_oversized():
    with pytest.raises(FrameTooLarge):
        encode_frame("k", {"text": "a" * (MAX_FRAME + 1)})


@pytest.mark.parametrize(
    "data",
    [b"", b"\x00\x00", b"\x00\x00\x00\x10abc", struct.pack(">I", 5) + b"\x81"],
    ids=["empty", "short-header", "truncated-payload", "truncated-map"],
)
def test_truncated_frames(data):
    with pytest.raises((PeerClosed, FrameMalformed)):
        read(data)


@pytest.mark.parametrize(
    "payload",
    [
        msgpack.packb([1, 2, 3]),
        msgpack.packb("text"),
        msgpack.packb({"kind": "k"}),
        msgpack.packb({"kind": "k", "body": {}, "extra": 1}),
        msgpack.packb({"kind": 5, "body": {}}),
        msgpack.packb({"kind": "k", "body": [1]}),
        b"\xc1",
        b"\x92\x01",
    ],
    ids=["array", "string", "no-body", "extra-key", "kind-int", "body-list", "never-used", "short"],
)
def test_non_map_or_wrong_shape_payloads(payload):
    with pytest.raises(FrameMalformed):
        decode_payload(payload)


def test_slow_frame_times_out():
    with pytest.raises(FrameTimeout):
        read(struct.pack(">I", 10) + b"abc", eof=False, timeout=0.05)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_fuzz_decoder_raises_only_proto_errors(data):
    try:
        read(data, timeout=0.5)
    except ProtoError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=256))
def test_fuzz_payload_decoder(payload):
    try:
        kind, body = decode_payload(payload)
    except ProtoError:
        return
    assert isinstance(kind, str) and isinstance(body, dict)


# The blocking client reads frames through the same decoder as the async side (recv_payload).
def test_recv_payload_reads_one_frame_over_a_socket():
    import socket

    from proto.frames import recv_payload

    ours, theirs = socket.socketpair()
    with ours, theirs:
        frame = encode_frame("memory_block", {"x": "é" * 70_000})
        theirs.sendall(frame + encode_frame("error", {"text": "next"}))
        assert decode_payload(recv_payload(ours)) == ("memory_block", {"x": "é" * 70_000})
        assert decode_payload(recv_payload(ours)) == ("error", {"text": "next"})


@pytest.mark.parametrize("length", [0, MAX_FRAME + 1])
def test_recv_payload_refuses_a_length_before_reading_the_payload(length):
    import socket

    from proto.frames import recv_payload

    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(struct.pack(">I", length))
        with pytest.raises(FrameTooLarge):
            recv_payload(ours)


def test_recv_payload_names_a_peer_that_closes_mid_frame():
    import socket

    from proto.frames import recv_payload

    ours, theirs = socket.socketpair()
    with ours:
        theirs.sendall(encode_frame("memory_block", {})[:-1])
        theirs.close()
        with pytest.raises(PeerClosed):
            recv_payload(ours)


def test_a_message_naming_a_path_that_is_not_utf8_is_sent_with_its_byte_escaped():
    # A home in a folder named in Latin-1: Python holds the byte as a lone surrogate.
    frame = encode_frame("memory_admin_reply", {"text": "written to /tmp/h\udcffome"})
    kind, body = decode_payload(frame[4:])
    assert kind == "memory_admin_reply"
    assert body == {"text": "written to /tmp/h\\udcffome"}
