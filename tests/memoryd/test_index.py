"""The index file: modes, WAL, schema, and a damaged or missing index rebuilt at start."""

import json
import logging
import sqlite3

import pytest

from memoryd.home import Home, ensure_dir
from memoryd.index.index import Index
from tests.recalling import recall_on

SCHEMA = [
    "CREATE VIRTUAL TABLE hits USING fts5(text, tokenize = 'unicode61')",
    "CREATE TABLE sources (rowid INTEGER PRIMARY KEY, kind TEXT, session TEXT, epoch INTEGER,"
    " record INTEGER, time TEXT, role TEXT, class TEXT, untrusted INTEGER)",
    "CREATE TABLE progress (log TEXT PRIMARY KEY, records INTEGER)",
]


def write_log(home: Home, session: str, texts) -> None:
    path = home.session_log(session)
    ensure_dir(path.parent)
    with open(path, "a", encoding="utf-8") as f:
        for text in texts:
            record = {"type": "user", "time": "2026-09-20T14:02:11Z", "content": text}
            f.write(json.dumps(record) + "\n")


@pytest.fixture()
def home(tmp_path):
    home = Home(tmp_path / "home")
    write_log(home, "mm-1", ["the launch window moved", "to Thursday"])
    return home


def test_open_creates_the_index(home):
    index = Index(home)
    index.open()
    assert home.index_dir.stat().st_mode & 0o777 == 0o700
    assert home.index_db.stat().st_mode & 0o777 == 0o600
    conn = sqlite3.connect(home.index_db)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    tables = [r[0] for r in conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table'")]
    assert all(statement in tables for statement in SCHEMA)
    conn.close()
    index.catch_up_all()
    for suffix in ("-wal", "-shm"):
        path = home.index_dir / f"memory.sqlite3{suffix}"
        assert not path.exists() or path.stat().st_mode & 0o777 == 0o600
    index.close()


def test_open_keeps_an_existing_index(home, caplog):
    index = Index(home)
    index.open()
    index.catch_up_all()
    index.close()
    again = Index(home)
    with caplog.at_level(logging.INFO):
        again.open()
    assert caplog.records == []
    assert again.catch_up_all() == 0
    assert len(recall_on(again, "launch", session="mm-2").hits) == 1
    again.close()


def _garbage(path):
    path.write_bytes(b"this is not a database" * 100)


def _other_schema(path):
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE hits (text TEXT)")
    conn.commit()
    conn.close()


def _missing_table(path):
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE progress")
    conn.commit()
    conn.close()


def _torn_pages(path):
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("CREATE TABLE padding (x)")
    conn.executemany("INSERT INTO padding VALUES (?)", [("x" * 500,) for _ in range(200)])
    conn.commit()
    conn.close()
    data = bytearray(path.read_bytes())
    for page in range(2, len(data) // 4096):
        data[page * 4096 + 8 : page * 4096 + 200] = b"\xa5" * 192
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_garbage, _other_schema, _missing_table, _torn_pages])
def test_a_damaged_index_is_rebuilt(home, caplog, damage):
    index = Index(home)
    index.open()
    index.catch_up_all()
    index.close()
    if damage is _other_schema:
        home.index_db.unlink()
    damage(home.index_db)
    again = Index(home)
    with caplog.at_level(logging.WARNING):
        again.open()
    damaged = [r.getMessage() for r in caplog.records if "memory-index-damaged" in r.getMessage()]
    assert len(damaged) == 1 and str(home.index_db) in damaged[0]
    assert recall_on(again, "launch", session="mm-2").hits == []  # serving, empty until caught up
    assert again.catch_up_all() == 2
    assert len(recall_on(again, "launch", session="mm-2").hits) == 1
    assert home.index_db.stat().st_mode & 0o777 == 0o600
    again.close()


def test_a_missing_index_is_built_at_start(home, caplog):
    index = Index(home)
    index.open()
    index.catch_up_all()
    index.close()
    home.index_db.unlink()
    again = Index(home)
    with caplog.at_level(logging.INFO):
        again.open()
    assert any("creating" in r.getMessage() for r in caplog.records)
    assert again.catch_up_all() == 2
    again.close()


def test_max_class_must_be_a_class(home):
    with pytest.raises(ValueError):
        Index(home, max_class="topsecret")
