"""A markdown export in backups/ is as long as notes.md, which has no limit: a forget's look for
its text there (its preview's count, the scrub, the finding of a forget stopped part way) reads
it a chunk at a time and holds one part, writing the scrubbed document as it is read; what it
writes is byte for byte what a scrub of the whole document wrote."""

import os
import random
import tracemalloc
from collections import deque

from memoryd.data import exportfiles, exportmd, forgetstopped, layout, matching
from memoryd.home import Home
from memoryd.journal import forgottenmarker
from proto.trim import trim

MARKER = forgottenmarker.marker("2026-12-05T12:00Z")
SECRET = "The safe code is 8812."
NAME = "export-20261205T120000Z.md"
BIG = 12 << 20
BOUND = 4 << 20  # a chunk of 256 KiB read and its copies while cut, the part being cut


def whole_scrub(data: bytes, text: str, marker: str) -> tuple[bytes, int]:
    """The scrub as it was made of the document read whole: decoded, cut at its blank lines (its
    last newline aside), each block whose text is text replaced, joined again."""
    document = data.decode("utf-8", "surrogateescape")
    body, tail = (document[:-1], "\n") if document.endswith("\n") else (document, "")
    parts = body.split("\n\n")
    if len(parts) < 2 or parts[1] != exportmd.LAYOUT:
        old = b"\n\n" + trim(text).encode("utf-8", "surrogateescape") + b"\n\n"
        new = b"\n\n" + trim(marker).encode("utf-8", "surrogateescape") + b"\n\n"
        return (data.replace(old, new), 1) if old in data else (data, 0)
    n = 0
    for i, part in enumerate(parts):
        held = exportmd.unblock(part)
        if held is not None and matching.same(held, text):
            parts[i] = exportmd.block(marker)
            n += 1
    return (("\n\n".join(parts) + tail).encode("utf-8", "surrogateescape"), n) if n else (data, 0)


def item(n: int, text: str) -> dict:
    provenance = {
        "file": "notes.md",
        "edit": f"2026-12-05-{n + 1:04d}",
        "session": f"mm-s{n % 90}",
        "time": "2026-12-05T10:00:00Z",
        "class": "private",
        "untrusted": n % 3 == 0,
    }
    return {"kind": "note", "number": n, "note": "noted", "provenance": provenance, "text": text}


HEAD = {"version": 1, "memoryd": "0.2.0", "exported": "2026-12-05T12:00:00Z"}
TEXTS = [
    "The router in the hall is reset after the backup. " * 30,
    "Zürich, 東京 and a line\nbreak, a\rlone CR, a form\x0cfeed\n\nand a blank line.",
    "    already indented\n\tand a tab",
    "### note 99 (noted)\n\n*edit 2026-12-04-0003, session s1, private*",
]


def big_export(home: Home, size: int) -> tuple[bytes, int]:
    """A markdown export of about size bytes in backups/, as exportmd writes it, SECRET the text
    of some of its notes; its bytes and how many notes hold SECRET."""
    rnd = random.Random(7)
    chosen: list[dict] = []
    total = held = 0
    while total < size:
        text = SECRET if rnd.random() < 0.001 else rnd.choice(TEXTS)
        held += text == SECRET
        chosen.append(item(len(chosen), text))
        total += len(text.encode()) + 120
    chosen.append(item(len(chosen), f"  {SECRET}\n"))  # the same text, trimmed
    folder = layout.backups(home)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(folder / NAME, "wb") as f:
        for part in exportmd.parts(HEAD, chosen):
            f.write(part)
    return (folder / NAME).read_bytes(), held + 1


def _peak(run) -> int:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_forget_reads_and_scrubs_a_big_markdown_export_a_part_at_a_time(tmp_path):
    home = Home(tmp_path / "home")
    home.memory.mkdir(parents=True)
    data, count = big_export(home, BIG)
    expected, n = whole_scrub(data, SECRET, MARKER)
    assert n == count and len(data) > BIG * 0.9
    del data
    found: list[int] = []
    assert _peak(lambda: found.append(exportfiles.holding(home, SECRET))) < BOUND
    assert _peak(lambda: found.append(exportfiles.holding(home, "no such text"))) < BOUND
    assert _peak(lambda: deque(forgetstopped._export_texts(home), maxlen=0)) < BOUND
    assert _peak(lambda: found.append(exportfiles.scrub_exports(home, SECRET, MARKER))) < BOUND
    assert found == [1, 0, 1]
    path = layout.backups(home) / NAME
    assert path.read_bytes() == expected
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert exportfiles.scrub_exports(home, SECRET, MARKER) == 0  # no block holds it now


def _chunked(data: bytes, rnd: random.Random) -> list[bytes]:
    cut, at = [], 0
    while at < len(data):
        step = rnd.choice([1, 2, 3, 7, 64, 1 << 20])
        cut.append(data[at : at + step])
        at += step
    return cut


LAYOUT = exportmd.LAYOUT.encode()
PIECES = [b"\n", b"\n", b"\n\n", b"    ", b" ", b"T", b"x", b"\r", b"\xc2\x85", b"\xe2\x80\xa8"]
PIECES += [b"\xff", b"\xc3", b"    T", b"\n    T", LAYOUT, b"\n\nT\n\n", b"\n\n" + LAYOUT + b"\n\n"]
STARTS = [b"# H\n\n" + LAYOUT, b"# H\n\n" + LAYOUT + b"\n\n", b"", b"# H", b"# H\n\n\n" + LAYOUT]


def test_the_streamed_scrub_writes_what_the_whole_document_scrub_wrote():
    """Any document, a memoryd export or not, cut into chunks anywhere: the scrub, the look for
    a text and the texts read are those of the document read whole."""
    rnd = random.Random(21)
    for _ in range(20_000):
        pieces = [rnd.choice(PIECES) for _ in range(rnd.randint(0, 30))]
        data = rnd.choice(STARTS) + b"".join(pieces)
        text = rnd.choice(["T", " T\n", "x", "", "T\n    T"])
        chunks = _chunked(data, rnd)
        replaced: list[int] = []
        out = b"".join(exportmd.scrubbed(lambda c=chunks: iter(c), text, MARKER, replaced))
        want, n = whole_scrub(data, text, MARKER)
        assert (out if replaced[0] else data, replaced[0]) == (want, n), (data, chunks)
        assert exportmd.holds_in(lambda c=chunks: iter(c), text) == (n > 0), (data, chunks)
        assert exportmd.scrub(data, text, MARKER) == (want, n)
        document = data.decode("utf-8", "surrogateescape")
        body = document[:-1] if document.endswith("\n") else document
        read = [exportmd.unblock(p) for p in body.split("\n\n")]
        whole = [p if t is None else t for p, t in zip(body.split("\n\n"), read, strict=True)]
        assert list(exportmd.texts(iter(chunks))) == whole, (data, chunks)
