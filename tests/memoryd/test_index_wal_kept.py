"""The index's WAL file does not keep the size of its largest transaction (index/connections.py):
a mode's tables built or a forget's purge at a million records wrote about a gigabyte to it, and
the file stayed that size on disk until memoryd stopped."""

import os

from memoryd.home import Home
from memoryd.index import connections
from memoryd.index.index import Index

KEPT = 256 << 10


def test_the_wal_is_cut_back_after_a_large_transaction(tmp_path, monkeypatch):
    monkeypatch.setattr(connections, "WAL_KEPT_BYTES", KEPT)
    home = Home(tmp_path / "home")
    index = Index(home)
    index.open()
    try:
        wal = home.index_dir / "memory.sqlite3-wal"
        writer = index._write()
        writer.execute("CREATE TABLE scratch (x BLOB)")
        writer.execute("BEGIN")
        writer.executemany(
            "INSERT INTO scratch VALUES (?)", ((os.urandom(4000),) for _ in range(2000))
        )
        writer.execute("COMMIT")
        assert wal.stat().st_size > 4 * KEPT  # the large transaction went through the WAL
        writer.execute("PRAGMA wal_checkpoint(PASSIVE)")
        writer.execute("DELETE FROM scratch WHERE rowid = 1")  # the next write starts it anew
        assert wal.stat().st_size <= KEPT
        assert writer.execute("SELECT count(*) FROM scratch").fetchone()[0] == 1999
    finally:
        index.close()
