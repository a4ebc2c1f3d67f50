"""forgottenmarker.marker_numbers gives the numbers notes.parse gives the notes whose text is a
marker, parsing only the notes that hold the marker's words: the first recall after each change of
a large notes.md (a forget's rewrite, any append once a note was forgotten) asks for them."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.journal import forgottenmarker
from memoryd.memory import notes

MARKER = forgottenmarker.marker("2026-11-20T10:00Z").encode()
HEAD = "§ noted 2026-11-20T10:00Z in session mm-a · private\n".encode()


def _by_parse(data: bytes) -> frozenset[int]:
    return frozenset(e.number for e in notes.parse(data) if forgottenmarker.is_marker(e.text))


@pytest.mark.parametrize(
    "data",
    [
        b"",
        MARKER + b"\n",  # before the first header: no note
        b"pasted text\n" + HEAD + MARKER + b"\n" + HEAD + b"kept\n",
        b"\xef\xbb\xbf" + HEAD.replace(b"\n", b"\r\n") + MARKER + b"\r\n",  # a BOM, CRLF
        HEAD + MARKER + b"\r\xa7 damaged in Windows-1252\r" + MARKER + b"\r",  # lone CR
        HEAD + b"\\" + HEAD + MARKER + b"\n",  # a stuffed line is text, not a header
        HEAD + b"text then " + MARKER + b"\n" + HEAD + MARKER + b"\n",  # the words inside text
        HEAD + MARKER + b"\n" + MARKER + b"\n",  # the marker twice is not a marker
        "§damaged header\n".encode() + MARKER + b"\n" + HEAD + b"caf\xe9\n" + HEAD + MARKER,
    ],
)
def test_the_numbers_are_those_the_parse_gives(data):
    assert forgottenmarker.marker_numbers(data) == _by_parse(data)


def test_a_large_notes_md_with_notes_forgotten_here_and_there():
    rng = random.Random(7)
    parts = []
    for n in range(3000):
        parts.append(HEAD)
        parts.append(MARKER + b"\n" if rng.random() < 0.05 else f"note {n}\n".encode())
    data = b"".join(parts)
    found = forgottenmarker.marker_numbers(data)
    assert found == _by_parse(data) and len(found) > 50


PIECES = [
    HEAD,
    MARKER,
    b"\n",
    b"\r",
    b"\r\n",
    b"\xef\xbb\xbf",
    b"\xa7",
    "§".encode(),
    b"\\",
    b"caf\xe9",
    b"plain words ",
    "§ moved 2026-11-20T10:00Z from memory.md in session mm-b\n".encode(),
]


@given(st.lists(st.sampled_from(PIECES), max_size=40))
@settings(max_examples=300, deadline=None)
def test_any_mix_of_headers_markers_and_line_ends_gives_the_parse_numbers(pieces):
    data = b"".join(pieces)
    assert forgottenmarker.marker_numbers(data) == _by_parse(data)
