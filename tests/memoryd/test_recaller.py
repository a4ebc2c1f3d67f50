"""Recall lives in recall.py: the index hands out read connections, recall.py's
Recaller searches, renders and logs, and the query is split into terms once per recall."""

import json
import sqlite3
import subprocess
import sys

import pytest

from memoryd.errors import IndexDamaged
from memoryd.home import Home, ensure_dir
from memoryd.index.index import Index
from memoryd.recall.recaller import Recaller
from memoryd.search import query


def write_log(home: Home, session: str, texts: list[str]) -> None:
    path = home.session_log(session)
    ensure_dir(path.parent)
    with open(path, "a", encoding="utf-8") as f:
        for n, text in enumerate(texts):
            record = {"type": "user", "time": f"2026-09-20T14:0{n}:00Z", "content": text}
            f.write(json.dumps(record) + "\n")


def opened(tmp_path, mode: str = "spec") -> Index:
    home = Home(tmp_path / "home")
    write_log(
        home,
        "mm-talk",
        [
            "the launch window moved to Thursday",
            "what did the owner say about the launch?",
            "the cat is called Miso",
        ],
    )
    index = Index(home, mode=mode)
    index.open()
    index.catch_up_all()
    return index


def test_the_index_module_does_not_import_recall():
    code = "import sys, memoryd.index; print('memoryd.recall.recaller' in sys.modules)"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "False"


class Counting:
    """query._TERM, counting its findall calls: every split of a query into terms."""

    def __init__(self, pattern):
        self.pattern = pattern
        self.calls = 0

    def findall(self, text):
        self.calls += 1
        return self.pattern.findall(text)


@pytest.mark.parametrize("mode", ["spec", "context"])
def test_a_recall_splits_its_query_once(tmp_path, monkeypatch, mode):
    index = opened(tmp_path, mode)
    recaller = Recaller(index)
    counting = Counting(query._TERM)
    monkeypatch.setattr(query, "_TERM", counting)
    answer = recaller.recall("what about the launch window", 5, session="mm-q")
    recaller.close()
    index.close()
    assert answer.hits
    assert counting.calls == 1


def test_the_recaller_writes_the_recall_log(tmp_path):
    index = opened(tmp_path)
    recaller = Recaller(index)
    first = recaller.recall("Miso", 2, session="mm-a")
    recaller.recall("Miso", 2, session="owner", by="owner")
    recaller.close()
    index.close()
    assert first.text.startswith("[1] memory · session mm-talk, 2026-09-20 14:02 UTC")
    [month] = list(index.home.recalls.iterdir())
    lines = [json.loads(line) for line in month.read_text().splitlines()]
    assert [(e["session"], e["query"], e["k"], e.get("by")) for e in lines] == [
        ("mm-a", "Miso", 2, None),
        ("owner", "Miso", 2, "owner"),
    ]
    assert lines[0]["hits"] == [
        {"kind": "session", "session": "mm-talk", "record": 2, "tag": "memory"}
    ]


def test_a_reader_is_pooled_and_given_back(tmp_path):
    index = opened(tmp_path)
    with index.reader() as conn:
        assert conn.execute("SELECT count(*) FROM sources").fetchone() == (3,)
        with pytest.raises(sqlite3.OperationalError):  # a reader cannot write
            conn.execute("DELETE FROM sources")
    with index.reader() as again:
        assert again is conn
    index.close()


def test_a_database_error_in_a_reader_is_index_damaged_and_drops_it(tmp_path):
    index = opened(tmp_path)
    with pytest.raises(IndexDamaged), index.reader() as conn:
        raise sqlite3.DatabaseError("database disk image is malformed")
    with pytest.raises(sqlite3.ProgrammingError):  # closed, not given back
        conn.execute("SELECT 1")
    with index.reader() as fresh:
        assert fresh is not conn
    index.close()


def test_a_reader_of_an_index_not_open_is_index_damaged(tmp_path):
    index = Index(Home(tmp_path / "home"))
    with pytest.raises(IndexDamaged), index.reader():
        pass
