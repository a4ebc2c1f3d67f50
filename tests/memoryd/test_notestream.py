"""notes.md read as a stream (data/notestream.py) gives the very notes notes.parse gives of the
whole file, however its chunks fall: headers damaged or not, a damaged header's time taken from
the note before it, escaped lines, lone CRs, bytes that are not UTF-8, text before any header."""

import random

from memoryd.data import notestream
from memoryd.memory import notes

PIECES = [
    "§ noted 2026-09-24T21:02Z in session mm-a · private\n".encode(),
    "§ noted 2026-09-24T21:03Z in session mm-b · secret · untrusted\n".encode(),
    "§ moved 2026-09-24T20:14Z from memory.md in session mm-c\n".encode(),
    "§ dropped 2026-02-30T20:14Z from user.md in session mm-d\n".encode(),
    "§ damaged header, no time at all\n".encode(),
    "§ damaged 2025-01-02T03:04Z session mm-e\n".encode(),
    b"\xa7 a header saved as Latin-1\n",
    "\\§ an escaped line of text\n".encode(),
    "§ a\r§ b after a lone CR\n".encode(),
    b"text with a damaged byte \xff\n",
    b"cr\rin\r\n",
    b"\xef\xbb\xbf",
    b"plain text\n",
    b"\n",
    b"\r",
    b"no newline",
]


def chunked(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def test_the_stream_gives_the_notes_parse_gives_however_the_chunks_fall():
    rng = random.Random(20)
    for _ in range(2_000):
        data = b"".join(rng.choice(PIECES) for _ in range(rng.randint(0, 30)))
        size = rng.randint(1, 64)
        assert list(notestream.entries(chunked(data, size))) == notes.parse(data), (data, size)


def test_a_damaged_header_without_a_time_takes_the_time_of_the_note_before():
    data = (
        "§ noted 2026-09-24T21:02Z in session mm-a · private\nfirst\n"
        "§ no time here\nsecond\n§ nor here\nthird\n"
    ).encode()
    got = list(notestream.entries(chunked(data, 7)))
    assert [n.time for n in got] == ["2026-09-24T21:02Z"] * 3
    assert [n.damaged for n in got] == [False, True, True]
    assert got == notes.parse(data)
