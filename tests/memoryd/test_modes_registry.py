"""Recall modes by name: the index, the indexer, a reindex and recall call the configured mode
through one interface (a mode registered here is called for each of its duties), and the recall
log line names the mode where it is made."""

import json
import sqlite3
from pathlib import Path

import pytest

from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.modes import MODES, registry
from memoryd.modes.registry import Mode, Stateless
from memoryd.recall.recaller import log_line
from memoryd.search.hit import Hit
from memoryd.search.query import Query
from tests.memoryd.test_modes_context import CONVERSATION, user
from tests.memoryd.test_reindex import append
from tests.recalling import recall_on


class Probe(Mode):
    """A mode with one table of its own that records what it was asked to do."""

    name = "probe"
    objects = ("probe_rows",)

    def __init__(self) -> None:
        self.calls: list[str] = []

    def load(self) -> None:
        self.calls.append("load")

    def create(self, conn: sqlite3.Connection) -> None:
        self.calls.append("create")
        conn.execute("CREATE TABLE probe_rows (rowid INTEGER PRIMARY KEY)")

    def drop(self, conn: sqlite3.Connection) -> None:
        conn.execute("DROP TABLE IF EXISTS probe_rows")

    def rows_added(self, conn, sources, texts) -> None:
        self.calls.append(f"added {len(sources)}")
        conn.executemany("INSERT INTO probe_rows VALUES (?)", [(row[0],) for row in sources])

    def rows_deleted(self, conn, where, params) -> None:
        self.calls.append("deleted")
        conn.execute(
            f"DELETE FROM probe_rows WHERE rowid IN (SELECT rowid FROM sources WHERE {where})",  # noqa: S608
            params,
        )

    def carry_over(self, conn: sqlite3.Connection, old: Path) -> int:
        self.calls.append("carry")
        return 0

    def search(self, conn: sqlite3.Connection, query: Query, k: int) -> list[Hit]:
        self.calls.append(f"search {query.text}")
        return []

    def open(self, connect, name) -> Stateless:
        self.calls.append("open")
        return Stateless(self)


@pytest.fixture
def probe(monkeypatch):
    mode = Probe()
    monkeypatch.setitem(registry._MODES, mode.name, mode)
    return mode


def probe_rows(home: Home) -> int:
    conn = sqlite3.connect(home.index_db)
    try:
        return conn.execute("SELECT count(*) FROM probe_rows").fetchone()[0]
    finally:
        conn.close()


def test_the_index_calls_the_mode_for_each_duty(tmp_path, probe):
    home = Home(tmp_path / "h")
    append(home, "mm-talk", CONVERSATION[:5])
    index = Index(home, mode="probe")
    index.open()
    assert probe.calls[:3] == ["load", "create", "open"]
    index.catch_up_all()
    assert probe_rows(home) == 5
    append(home, "mm-talk", CONVERSATION[5:])
    index.catch_up_all()
    assert probe_rows(home) == len(CONVERSATION)
    recall_on(index, "kiln", k=5, session="mm-q")
    assert "search kiln" in probe.calls
    # A rewritten log: its rows are deleted from the mode's table as from the spec's.
    home.session_log("mm-talk").write_text("")
    append(home, "mm-talk", [user("2023-07-01T10:00:00Z", "A new start")])
    index.catch_up_all()
    assert "deleted" in probe.calls and probe_rows(home) == 1
    index.reindex()
    assert "carry" in probe.calls and probe_rows(home) == 1
    index.close()
    (log_file,) = home.recalls.iterdir()
    assert json.loads(log_file.read_text().splitlines()[-1])["mode"] == "probe"


def test_the_builtin_modes_and_an_unknown_one():
    assert MODES == ("spec", "context", "hybrid")
    with pytest.raises(ValueError, match="not a recall mode: 'nope'"):
        registry.get("nope")
    with pytest.raises(ValueError, match="already registered"):
        registry.register(registry.get("context"))


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("spec", '{"time":"t","session":"s","query":"q","k":5,"hits":[]}'),
        ("context", '{"time":"t","session":"s","query":"q","k":5,"hits":[],"mode":"context"}'),
    ],
)
def test_the_log_line_names_a_mode_other_than_spec(mode, expected):
    assert log_line("t", "s", "q", 5, [], mode=mode) == expected


def test_the_mode_follows_by_and_partial_in_the_line():
    line = log_line("t", "s", "q", 5, [], "owner", partial=True, mode="hybrid")
    assert line.endswith('"by":"owner","partial":true,"mode":"hybrid"}')
