"""A line of labels.jsonl longer than any label memoryd writes is passed over unread, yet it may
be a label (a hand edit gave a session's line a long field): each session it names is taken at the
strictest label there is, found a piece at a time as the line passes, never read whole, and said
in one line naming the file. A label is never lost to a long line, however long."""

import io
import json
import logging
import os
import random
import re
import time
import tracemalloc

from memoryd.home import Home, ensure_dir
from memoryd.journal.boundedfile import LINE_MOST, Lines
from memoryd.trust import risen
from memoryd.trust.risenlong import STRICTEST, Named

HUGE = 64 << 20  # sparse; a gigabyte is searched the same way, a block at a time (slower here)
HELD = 16 << 20  # what a read may hold at its peak


def a_home(tmp_path) -> Home:
    home = Home(tmp_path / "home")
    ensure_dir(home.memory)
    return home


def label(session: str, klass: str = "private", untrusted: bool = True, **more) -> bytes:
    return json.dumps({"session": session, "class": klass, "untrusted": untrusted, **more}).encode()


def said(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == risen.__name__]


def test_a_long_label_line_gives_its_session_the_strictest_label(tmp_path, caplog):
    home = a_home(tmp_path)
    where = risen.path(home)
    long = label("web1", "public", False, why="x" * (LINE_MOST + 10))
    where.write_bytes(label("t1") + b"\n" + long + b"\n" + label("t2", "secret", False) + b"\n")
    with caplog.at_level(logging.WARNING, logger=risen.__name__):
        assert risen.label(home, "web1") == STRICTEST
        assert risen.label(home, "t1") == ("private", True)  # the other lines stand
        assert risen.label(home, "t2") == ("secret", False)
        assert risen.label(home, "web1") == STRICTEST  # read on: said once
    lines = said(caplog)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{where}: line 2 is longer than any label memoryd writes")
    assert (
        "the session it names (web1) taken at the strictest label (secret, untrusted)" in lines[0]
    )


def test_a_long_last_line_without_its_end_is_searched_too(tmp_path, caplog):
    home = a_home(tmp_path)
    where = risen.path(home)
    # a session named at its start, another with blanks and an escape, past the first block
    data = label("t1") + b"\n" + b'{"why": "' + b"y" * (3 << 20)
    data += b'", "session" :\t"w\\u00652", "class": "public", "untrusted": false'
    where.write_bytes(data)
    with caplog.at_level(logging.WARNING, logger=risen.__name__):
        assert risen.label(home, "we2") == STRICTEST
        assert risen.label(home, "t1") == ("private", True)
        risen.rise(home, "t3", ("secret", False))  # on a line of its own after the damage
        risen._homes.clear()  # as a new memoryd reads it
        assert risen.label(home, "we2") == STRICTEST
        assert risen.label(home, "t3") == ("secret", False)
    lines = said(caplog)
    assert len(lines) == 2, lines  # once per reading memoryd
    assert "(we2) taken at the strictest label" in lines[0]


def test_a_long_line_naming_no_session_gives_no_label(tmp_path, caplog):
    home = a_home(tmp_path)
    where = risen.path(home)
    where.write_bytes(label("t1") + b"\n" + b'{"session": "bad id!"' + b" " * LINE_MOST + b"}\n")
    with caplog.at_level(logging.WARNING, logger=risen.__name__):
        assert risen.label(home, "t1") == ("private", True)
        assert risen.label(home, "bad id!") is None
    lines = said(caplog)
    assert len(lines) == 1 and "passed over unread, it names no session;" in lines[0], lines


def test_a_huge_line_is_searched_a_piece_at_a_time(tmp_path, caplog):
    home = a_home(tmp_path)
    where = risen.path(home)
    with open(where, "wb") as f:
        f.write(label("t1") + b"\n" + b'{"session": "first1", "x": "')
        f.truncate(HUGE)  # sparse: NUL bytes, no disk used
        f.seek(0, os.SEEK_END)
        f.write(b'", "session": "last1"}')  # no line end
    started = time.monotonic()
    tracemalloc.start()
    try:
        with caplog.at_level(logging.WARNING, logger=risen.__name__):
            assert risen.label(home, "last1") == STRICTEST
        held = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert held < HELD, held
    assert risen.label(home, "first1") == STRICTEST
    assert risen.label(home, "t1") == ("private", True)
    lines = said(caplog)
    assert len(lines) == 1 and "the 2 sessions it names (first1, last1)" in lines[0], lines
    print(f"{HUGE:,} bytes searched in {time.monotonic() - started:.2f} s, {held:,} held")


NAMED = re.compile(rb'"session"[ \t]*:[ \t]*"([A-Za-z0-9_-]+)"')


def test_the_sessions_a_passed_line_names_are_found_at_any_block_and_bound():
    rng = random.Random(29)
    pieces = [b'"session": "s1"', b'"session":"s22"', b'"session" : "bad!"', b"\n", b"\r", b"xy"]
    for _ in range(3000):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
        most, block = rng.randint(1, 40), rng.randint(1, 30)
        named = Named()
        lines = Lines(io.BytesIO(data), len(data), most=most, block=block, cr=True, passed=named)
        for _ in lines:
            pass
        whole = data.splitlines()  # numbered as Lines numbers them, a last line without its end too
        wanted = {m.group(1).decode() for n in lines.long for m in NAMED.finditer(whole[n - 1])}
        assert named.sessions == wanted, (data, most, block)
        assert named.lines == len(lines.long), (data, most, block)
