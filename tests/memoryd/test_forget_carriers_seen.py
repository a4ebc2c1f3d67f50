"""A forget's writer job takes the index rows its prepare found holding the text on a reader, and
looks again only at what changed since (carrierseen.py): finding them all again on the writer held
every other write for about two seconds at 150,000 records holding the text. The keys' lines in
forgotten.jsonl and the delete of their rows are writer jobs of their own after it. What came
between prepare and the writer job is forgotten all the same: records added to a log, a log read
again that renumbered its records in place, rows deleted (the whole find is made again)."""

import json
import sqlite3
import threading

import pytest

from memoryd.data import carriers, forget
from memoryd.index import indexer
from memoryd.journal import forgotten
from proto.records import UserRecord, append_session_record
from tests.memoryd.owner_data_harness import Memoryd, T

TEXT = "please remind me to water the ficus plant every tuesday morning"
COPIES = 40


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    m.say("rep", *[t for n in range(COPIES) for t in (TEXT, f"ok noted number {n}")])
    m.say("other", "something else entirely", "fine")
    yield m
    m.close()


def _holding(m: Memoryd) -> list[tuple[str, int]]:
    conn = sqlite3.connect(m.index.path)
    try:
        sql = (
            "SELECT s.session, s.record FROM sources s JOIN hits h ON h.rowid = s.rowid"
            " WHERE instr(h.text, ?) > 0"
        )
        return sorted(conn.execute(sql, (TEXT,)).fetchall())
    finally:
        conn.close()


def _finds_in_run(monkeypatch, before=None) -> list[str]:
    """What each carriers find within forget.run (on the writer) read for the text: "all" its
    every match, "since" those past prepare's mark, "sessions" those of sessions whose log changed;
    and "list" or "purge" for the keys listed and their rows deleted within it; before(service):
    run on the writer just before run itself."""
    calls: list[str] = []
    in_run = threading.local()
    real_candidates, real_run = carriers._candidates, forget.run

    def candidates(conn, text, *within):  # the rows a find reads for a text
        if getattr(in_run, "on", False):
            where = within[0][0] if within else ""
            calls.append("sessions" if "json_each" in where else "since" if where else "all")
        return real_candidates(conn, text, *within)

    for name in ("_list", "purge"):
        real = getattr(forget, name)

        def step(*args, real=real, name=name):
            if getattr(in_run, "on", False):
                calls.append(name.strip("_"))
            return real(*args)

        monkeypatch.setattr(forget, name, step)

    def run(service, *args, **kwargs):
        if before is not None:
            before(service)
        in_run.on = True
        try:
            return real_run(service, *args, **kwargs)
        finally:
            in_run.on = False

    monkeypatch.setattr(carriers, "_candidates", candidates)
    monkeypatch.setattr(forget, "run", run)
    return calls


def _forget(m: Memoryd) -> str:
    said = json.loads(m.admin("forget", {"id": "session:rep:0"}))["message"]
    assert said.startswith("forgot record 0 of session rep"), said
    return said


def test_the_writer_job_takes_what_prepare_found_and_finds_nothing_again(md, monkeypatch):
    calls = _finds_in_run(monkeypatch)
    _forget(md)
    # before: ["all", "list", "purge"], every match of the text read again, the keys listed and
    # the first rows deleted, all in the one job
    assert calls == ["since"]
    assert _holding(md) == []
    listed = forgotten.held(md.home)
    assert {f"session:rep:{2 * n}" for n in range(COPIES)} <= listed


def test_records_added_between_prepare_and_the_writer_job_are_forgotten_too(md, monkeypatch):
    def said_meanwhile(service) -> None:  # the writer job catches the log up first
        append_session_record(md.home.session_log("late"), UserRecord(time=T, content=TEXT))

    md.home.session_log("late").parent.mkdir(mode=0o700)
    calls = _finds_in_run(monkeypatch, said_meanwhile)
    _forget(md)
    assert calls == ["since"]
    assert _holding(md) == []
    assert "session:late:0" in forgotten.held(md.home)


def test_a_log_renumbered_in_place_between_is_looked_at_again(md, monkeypatch):
    def renumbered(service) -> None:
        # what a log read again does to rows whose text stayed (index/reread.py): their record
        # numbers move in place, and the log's progress changes with the swap
        index = service.index
        conn = index._write()
        with index._transaction(conn):
            conn.execute(
                "UPDATE sources SET record = record + 1000 WHERE kind = 'session'"
                " AND session = 'rep' AND record > 0"
            )
            state = indexer.load_state(conn, indexer.log_name("rep"))
            state.records += 1000
            indexer.save_state(conn, indexer.log_name("rep"), state)

    calls = _finds_in_run(monkeypatch, renumbered)
    _forget(md)
    assert calls == ["since", "sessions"]
    assert _holding(md) == []
    listed = forgotten.held(md.home)
    assert {f"session:rep:{2 * n + 1000}" for n in range(1, COPIES)} <= listed


def test_rows_deleted_between_make_the_writer_find_them_all_again(md, monkeypatch):
    def deleted(service) -> None:
        index = service.index
        conn = index._write()
        with index._transaction(conn):
            indexer._delete_rows(conn, "kind = 'session' AND session = 'other'", ())

    calls = _finds_in_run(monkeypatch, deleted)
    _forget(md)
    assert calls == ["all"]
    assert _holding(md) == []
