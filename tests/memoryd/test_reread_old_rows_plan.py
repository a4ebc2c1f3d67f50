"""A session log read again pairs its new rows with the old rows it looks up by rowid from where
the pairing stands, each with its text: the lookup walks sources by rowid and fetches only those
rows' texts. Left to itself SQLite read every text of the full-text table and sorted them, at
each look: re-reading a log of 1,000 records cost about 1 s at 750,000 rows, so a home of
hundreds of logs read again took minutes, every memory write waiting meanwhile."""

import json
import os
import sqlite3

from memoryd.home import Home, ensure_dir
from memoryd.index import indexer, reread


def _log(home: Home, session: str, n: int, word: str) -> None:
    path = home.session_log(session)
    ensure_dir(path.parent)
    lines = [
        json.dumps({"type": "user", "time": "2026-11-01T10:00:00Z", "content": f"{word} {i}"})
        for i in range(n)
    ]
    tmp = path.with_name("tmp")
    tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    os.replace(tmp, path)  # another file each time, as an editor's save is


def test_old_rows_are_looked_up_by_rowid_not_by_reading_every_text(tmp_path):
    home = Home(tmp_path / "home")
    _log(home, "small", 30, "harbour")
    _log(home, "big", 2000, "lighthouse")
    conn = sqlite3.connect(tmp_path / "index.sqlite3", isolation_level=None)
    try:
        indexer.create_schema(conn)
        for session in ("small", "big"):
            conn.execute("BEGIN")
            indexer.index_session(conn, home, session, "private")
            conn.execute("COMMIT")
        plan = " | ".join(
            r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN {reread._OLD}", ("small", 0, 94))
        )
        assert "SEARCH s USING INTEGER PRIMARY KEY" in plan, plan
        assert "TEMP B-TREE" not in plan, plan
        assert "SCAN h VIRTUAL TABLE INDEX 0:" not in plan.replace("INDEX 0:=", ""), plan
        # The reading again itself is unchanged: the small log, its first record changed.
        _log(home, "small", 30, "marina")
        conn.execute("BEGIN")
        indexer.index_session(conn, home, "small", "private")
        conn.execute("COMMIT")
        texts = [
            t
            for (t,) in conn.execute(
                "SELECT h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
                " WHERE s.session = 'small' ORDER BY s.rowid"
            )
        ]
        assert texts == [f"marina {i}" for i in range(30)]
        assert conn.execute("SELECT count(*) FROM sources WHERE session = 'big'").fetchone() == (
            2000,
        )
    finally:
        conn.close()
