"""labels.jsonl saved with CR line ends (an editor's "classic Mac" line ends, a tool that turned
LF into CR) holds lines, as bytes.splitlines reads them: memoryd has always read the file so.
Read a block at a time with a bound on a line, a file of CR-ended labels longer than that bound
is still its labels, never one long damaged line passed over: a label never gets laxer."""

import io
import logging
import random

from memoryd.home import Home, ensure_dir
from memoryd.journal.boundedfile import LINE_MOST, Lines
from memoryd.trust import risen


def a_home(tmp_path) -> Home:
    home = Home(tmp_path / "home")
    ensure_dir(home.memory)
    return home


def label_line(session: str, klass: str = "private", untrusted: bool = False) -> bytes:
    return b'{"session": "%s", "class": "%s", "untrusted": %s}' % (
        session.encode(),
        klass.encode(),
        b"true" if untrusted else b"false",
    )


def said(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == risen.__name__]


def test_a_cr_ended_file_past_the_line_bound_keeps_every_label(tmp_path, caplog):
    home = a_home(tmp_path)
    lines = [label_line(f"s{i}") for i in range(1500)] + [label_line("web1", untrusted=True)]
    data = b"\r".join(lines) + b"\r\n"  # memoryd's next append ends a file so
    assert len(data) > LINE_MOST
    risen.path(home).write_bytes(data)
    with caplog.at_level(logging.WARNING, logger=risen.__name__):
        assert risen.label(home, "web1") == ("private", True)
        assert risen.label(home, "s0") == ("private", False)
        assert risen.label(home, "s1499") == ("private", False)
    assert said(caplog) == []


def test_a_cr_line_end_cut_by_a_later_append_is_one_line_end(tmp_path, caplog):
    home = a_home(tmp_path)
    where = risen.path(home)
    where.write_bytes(label_line("web1", untrusted=True) + b"\r")
    with caplog.at_level(logging.WARNING, logger=risen.__name__):
        assert risen.label(home, "web1") == ("private", True)  # a CR ends a line
        risen.rise(home, "web2", ("secret", False))  # puts an LF first: CR LF ends line 1
        risen._homes.clear()  # as a new memoryd reads it
        assert risen.label(home, "web1") == ("private", True)
        assert risen.label(home, "web2") == ("secret", False)
    assert said(caplog) == []


def whole(data: bytes, most: int) -> tuple[list[bytes], list[int], bytes, int]:
    """What a whole read split by bytes.splitlines gives, a line longer than most blank."""
    end = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
    lines, rest = data[:end].splitlines(), data[end:]
    long = [i + 1 for i, line in enumerate(lines) if len(line) > most]
    if len(rest) > most:
        return [b"" if len(x) > most else x for x in lines], [*long, len(lines) + 1], b"", len(data)
    return [b"" if len(x) > most else x for x in lines], long, rest, end


def test_lines_with_cr_split_as_splitlines_at_any_block_and_bound():
    rng = random.Random(28)
    pieces = [b"a", b"bb", b"\n", b"\r", b"\r\n", b"\n\r"]
    for _ in range(4000):
        data = b"".join(
            rng.choice([*pieces, b"x" * rng.randint(0, 30)]) for _ in range(rng.randint(0, 12))
        )
        most, block = rng.randint(1, 20), rng.randint(1, 25)
        lines = Lines(io.BytesIO(data), len(data), most=most, block=block, cr=True)
        got: list[bytes] = []
        for first, taken in lines:
            assert first == len(got) + 1, (data, most, block)
            got += taken.splitlines()
        assert (got, lines.long, lines.rest, lines.done) == whole(data, most), (data, most, block)
