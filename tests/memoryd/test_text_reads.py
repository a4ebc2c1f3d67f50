"""A hit's snippet (search/textcut.py) and a row's two ends (modes/addressed.py) are read in SQL,
not by blob I/O: they read what blob I/O read, whatever a hand edit left in the row, and reading
them on a connection that lives as long as memoryd does not grow it."""

import gc
import sqlite3
import tracemalloc

import pytest

from memoryd.modes import addressed
from memoryd.search.query import snippet
from memoryd.search.textcut import HEAD, WHOLE, _decode_prefix, hit_snippet, long_snippet

TERMS = ["needle"]
LONG = "filler " * 2_000 + "needle in the hay " + "filler " * (WHOLE // 7)
# Three bytes a character: more than WHOLE bytes in fewer than WHOLE characters.
WIDE = "€" * (WHOLE // 3) + " needle " + "€" * 100


@pytest.fixture
def conn(tmp_path):
    """hits_content as FTS5 keeps it (id, c0), on a file, as memoryd's readers have it."""
    db = sqlite3.connect(tmp_path / "t.sqlite3")
    db.execute("CREATE TABLE hits_content(id INTEGER PRIMARY KEY, c0)")
    yield db
    db.close()


def _by_blob(conn: sqlite3.Connection, rowid: int, head: int, tail: int = 0) -> bytes | None:
    """What blob I/O read of the row: all of it up to head + tail bytes, else its first head
    bytes (and its last tail bytes after them); None when blob I/O cannot open it."""
    try:
        blob = conn.blobopen("hits_content", "c0", rowid, readonly=True)
    except sqlite3.OperationalError:
        return None
    with blob:
        size = len(blob)
        if size <= head + tail:
            return blob.read()
        first = blob.read(head)
        blob.seek(size - tail)
        return first + b"\n" + blob.read(tail) if tail else first


# name: the value a hand edit (or memoryd) left in c0
VALUES = {
    "text": "a café with a needle",
    "blob of the text": "a café with a needle".encode(),
    "blob not UTF-8": b"needle \xff\xfe here",
    "empty text": "",
    "empty blob": b"",
    "long text": LONG,
    "long blob": LONG.encode(),
    "wide text": WIDE,
    "integer": 12,
    "real": 1.5,
    "null": None,
}


@pytest.mark.parametrize("value", VALUES.values(), ids=VALUES.keys())
def test_a_snippet_reads_what_blob_io_read(conn, value):
    conn.execute("INSERT INTO hits_content VALUES (1, ?)", (value,))
    read = _by_blob(conn, 1, HEAD)
    if read is None:
        expected = None
    elif len(read) <= WHOLE:
        expected = snippet(read.decode("utf-8", errors="replace"), TERMS)
    else:
        expected = long_snippet(_decode_prefix(read), TERMS)
    assert hit_snippet(conn, 1, TERMS) == expected


@pytest.mark.parametrize("value", VALUES.values(), ids=VALUES.keys())
def test_a_rows_ends_read_what_blob_io_read(conn, value):
    conn.execute("INSERT INTO hits_content VALUES (1, ?)", (value,))
    read = _by_blob(conn, 1, addressed.HEAD, addressed.TAIL)
    expected = "" if read is None else read.decode("utf-8", errors="replace")
    assert addressed.ends(conn, 1) == expected


def test_a_row_that_is_not_there_has_no_snippet_and_no_ends(conn):
    assert hit_snippet(conn, 7, TERMS) is None
    assert addressed.ends(conn, 7) == ""


def test_reading_many_hits_on_one_connection_does_not_grow_it(conn):
    conn.executemany(
        "INSERT INTO hits_content VALUES (?, ?)",
        [(n, f"Hey Dana! row {n} holds a needle") for n in range(1, 101)],
    )
    for n in range(1, 101):  # warm: statement cache, interned strings
        hit_snippet(conn, n, TERMS)
        addressed.ends(conn, n)
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for _ in range(20):
            for n in range(1, 101):
                hit_snippet(conn, n, TERMS)
                addressed.ends(conn, n)
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # 4,000 reads: a weak reference kept for each (about 80 bytes) would be over 300 KB.
    assert after - before < 50_000, after - before
