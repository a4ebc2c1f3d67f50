"""stdin read line by line with a bound: oversized lines are skipped and answered, never held."""

import json
import os
import threading

import anyio
import pytest

from memory_mcp.stdin_lines import MAX_MESSAGE, BoundedLines, request_id


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"x":"', 7),
        (b' { "id" : "abc" , "method"', "abc"),
        (b'{"jsonrpc":"2.0","method":"tools/call","params":{"id":5,"text":"xxxx', None),
        (b'{"method":"a","params":{"id":5},"id":9}', 9),
        (b'{"id":true}', None),
        (b'{"id":null}', None),
        (b'{"id":1.5}', None),
        (b'{"id":"\\ud800"}', None),  # half a surrogate pair: no answer could carry it
        (b'{"id":"\\ud83d\\ude00"}', "\U0001f600"),
        (b"[1,2]", None),
        (b"not json", None),
        (b"", None),
        (b'{"id":12', None),
        (b'{"id":12}', 12),
        (b'{"id":12 ,"params":{', 12),
    ],
)
def test_request_id_from_the_first_bytes(head, expected):
    assert request_id(head) == expected


def read_all(data: bytes):
    """Every line BoundedLines yields from data, and every oversized call it made."""
    read_fd, write_fd = os.pipe()

    def write():
        with os.fdopen(write_fd, "wb") as out:
            out.write(data)

    writer = threading.Thread(target=write)
    writer.start()
    oversized = []

    async def on_oversized(ident, size):
        oversized.append((ident, size))

    async def on_not_text(ident):
        oversized.append((ident, "not UTF-8"))

    async def body():
        return [line async for line in BoundedLines(read_fd, on_oversized, on_not_text)]

    try:
        lines = anyio.run(body)
    finally:
        writer.join()
        os.close(read_fd)
    return lines, oversized


def test_lines_come_whole_and_a_last_line_without_newline_too():
    lines, oversized = read_all(b'{"a":1}\n{"b":2}\n{"c":3}')
    assert lines == ['{"a":1}\n', '{"b":2}\n', '{"c":3}']
    assert oversized == []


def test_a_line_at_the_limit_passes_and_one_byte_over_is_skipped_and_answered():
    at_limit = b"x" * (MAX_MESSAGE - 1) + b"\n"
    over = json.dumps({"jsonrpc": "2.0", "id": 41, "params": "y" * MAX_MESSAGE}).encode() + b"\n"
    lines, oversized = read_all(at_limit + over + b'{"next":1}\n')
    assert [len(line) for line in lines] == [MAX_MESSAGE, len('{"next":1}\n')]
    assert oversized == [(41, len(over))]


def test_an_oversized_last_line_without_newline_is_skipped_too():
    lines, oversized = read_all(b'{"a":1}\n' + b"z" * (3 * MAX_MESSAGE))
    assert lines == ['{"a":1}\n']
    assert oversized == [(None, 3 * MAX_MESSAGE)]


@pytest.mark.parametrize("last", [b"\n", b""])
def test_a_line_that_is_not_utf8_is_answered_and_never_handed_on(last):
    """Decoded with replacement characters, a Latin-1 "caf\xe9" would be written into memory as
    "caf\ufffd", a text the client never sent."""
    bad = b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"text":"caf\xe9"}}'
    lines, answered = read_all(b'{"a":1}\n' + bad + b"\n" + b'{"b":"\xc3\xa9"}' + last)
    assert lines == ['{"a":1}\n', '{"b":"\u00e9"}' + last.decode()]
    assert answered == [(9, "not UTF-8")]
    lines, answered = read_all(b'{"a":1}\n' + bad + last)
    assert lines == ['{"a":1}\n'] and answered == [(9, "not UTF-8")]
