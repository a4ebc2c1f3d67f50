"""Reindex: a new file renamed over the old, equal to the incremental index, recall going on."""

import json
import random
import sqlite3
import threading

import pytest

from memoryd.home import Home, ensure_dir
from memoryd.index.index import Index
from tests.recalling import recall_on

CLASSES = ["public", "private", "secret"]


def random_records(rng: random.Random, count: int) -> list[dict]:
    words = ["launch", "window", "march", "notes", "lisbon", "utc", "release", "cat", "miso"]
    records = []
    for n in range(count):
        time = f"2026-09-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:00Z"
        text = " ".join(rng.choices(words, k=rng.randint(0, 6)))
        kind = rng.choice(["user", "assistant", "call", "result"])
        if kind == "user":
            records.append({"type": "user", "time": time, "content": text})
        elif kind == "assistant":
            records.append({"type": "assistant", "time": time, "content": text or None})
        elif kind == "call":
            call = {"id": f"c{n}", "name": "read_file", "arguments": json.dumps({"p": text})}
            records.append({"type": "assistant", "time": time, "tool_calls": [call]})
        else:
            records.append(
                {
                    "type": "tool_result",
                    "time": time,
                    "call_id": f"c{n}",
                    "name": "read_file",
                    "output": text,
                    "class": rng.choices(CLASSES, weights=[3, 6, 1])[0],
                    "untrusted": rng.random() < 0.1,
                }
            )
    return records


def append(home: Home, session: str, records) -> None:
    path = home.session_log(session)
    ensure_dir(path.parent)
    with open(path, "a", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)


def append_note(home: Home, n: int, rng: random.Random) -> None:
    ensure_dir(home.memory)
    klass = rng.choice(CLASSES)
    kind = rng.choice(["noted", "moved", "dropped"])
    if kind == "noted":
        head = f"§ noted 2026-09-22T18:{n % 60:02d}Z in session mm-{n} · {klass}"
        head += " · untrusted" if rng.random() < 0.5 else ""
    else:
        head = f"§ {kind} 2026-09-24T20:{n % 60:02d}Z from memory.md in session mm-{n}"
    with open(home.memory_file("notes.md"), "a", encoding="utf-8") as f:
        f.write(f"{head}\nnote {n} about the launch window\n")


def contents(path) -> dict:
    """Everything the index holds, without rowids (which depend on the order of indexing)."""
    conn = sqlite3.connect(path)
    try:
        return {
            "rows": sorted(
                conn.execute(
                    "SELECT s.kind, s.session, s.epoch, s.record, s.time, s.role, s.class,"
                    " s.untrusted, h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
                ),
                key=repr,
            ),
            "progress": sorted(conn.execute("SELECT * FROM progress")),
            # A log's tail hash, without the file it was read from (device:inode, after a
            # space): two homes, or a log copied, hold the same index of other files.
            "offsets": sorted(
                (*row[:-1], row[-1].split(" ")[0] if isinstance(row[-1], str) else row[-1])
                for row in conn.execute("SELECT * FROM offsets")
            ),
            "fts": conn.execute("SELECT count(*) FROM hits").fetchone(),
        }
    finally:
        conn.close()


@pytest.mark.parametrize("max_class", ["private", "secret"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_reindex_equals_incremental_indexing(tmp_path, seed, max_class):
    rng = random.Random(seed)
    home = Home(tmp_path / "home")
    index = Index(home, max_class=max_class)
    index.open()
    sessions = [f"mm-{n}" for n in range(5)]
    for step in range(8):
        for session in rng.sample(sessions, 3):
            append(home, session, random_records(rng, rng.randint(1, 30)))
            index.catch_up_session(session)
        append_note(home, step, rng)
        if step % 3 == 0:
            index.catch_up_notes()
    index.catch_up_all()
    incremental = contents(home.index_db)
    assert incremental["rows"]
    logs, records, notes = index.reindex()
    assert contents(home.index_db) == incremental
    assert logs == len(list(home.sessions.iterdir()))
    assert records + notes == len(incremental["rows"])
    assert notes == sum(1 for row in incremental["rows"] if row[0] != "session")
    index.close()


def test_reindex_replaces_the_file_and_readers_see_the_new_one(tmp_path):
    home = Home(tmp_path / "home")
    append(
        home, "mm-gone", [{"type": "user", "time": "2026-09-20T14:02:11Z", "content": "ephemeral"}]
    )
    append(
        home, "mm-kept", [{"type": "user", "time": "2026-09-20T14:02:11Z", "content": "lasting"}]
    )
    index = Index(home)
    index.open()
    index.catch_up_all()
    assert recall_on(index, "ephemeral", session="x").hits  # a pooled reader on the old file
    before = home.index_db.stat().st_ino
    (home.session_log("mm-gone")).unlink()
    seen = []
    assert index.reindex(progress=seen.append) == (1, 1, 0)
    assert home.index_db.stat().st_ino != before
    assert home.index_db.stat().st_mode & 0o777 == 0o600
    assert not home.index_db.with_name("memory.sqlite3.new").exists()
    assert recall_on(index, "ephemeral", session="x").hits == []
    assert recall_on(index, "lasting", session="x").hits
    conn = sqlite3.connect(home.index_db)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()
    # The writer works on the new file.
    append(home, "mm-kept", [{"type": "user", "time": "2026-09-20T14:03:00Z", "content": "more"}])
    assert index.catch_up_session("mm-kept") == 1
    index.close()


def test_recall_keeps_answering_during_reindex(tmp_path):
    home = Home(tmp_path / "home")
    rng = random.Random(5)
    for n in range(20):
        records = random_records(rng, 300)
        records.append({"type": "user", "time": "2026-09-20T14:02:11Z", "content": "launch"})
        append(home, f"mm-{n}", records)
    index = Index(home)
    index.open()
    index.catch_up_all()
    stop = threading.Event()
    answered, errors = [], []

    def recalls():
        while not stop.is_set():
            try:
                answered.append(len(recall_on(index, "launch", 5, session="mm-r").hits))
            except Exception as error:  # noqa: BLE001
                errors.append(error)

    threads = [threading.Thread(target=recalls) for _ in range(2)]
    for thread in threads:
        thread.start()
    for _ in range(3):
        index.reindex()
    stop.set()
    for thread in threads:
        thread.join()
    assert errors == []
    assert answered and all(count == 5 for count in answered)
    index.close()


def test_reindex_of_an_empty_home(tmp_path):
    index = Index(Home(tmp_path / "home"))
    index.open()
    assert index.reindex() == (0, 0, 0)
    assert recall_on(index, "anything", session="x").hits == []
    index.close()
