"""A forget of a text many records hold deletes their index rows in slices, each a writer job of
its own, so that other writes run between them instead of waiting for one delete of them all
(seconds at 40,000 records). While rows are left, forgotten.jsonl already lists their keys, so
recall leaves them out; the forget answers only once the last is deleted, and none is left."""

import json
import sqlite3

import pytest

from memoryd.data import purgeslices
from memoryd.journal import forgotten
from memoryd.writer import WRITE
from tests.memoryd.owner_data_harness import Memoryd

TEXT = "please remind me to water the ficus plant every tuesday morning"
COPIES = 300


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    texts = [t for n in range(COPIES) for t in (TEXT, f"ok noted number {n}")]
    m.say("rep", *texts)
    yield m
    m.close()


def rows_of_rep(m: Memoryd) -> int:
    conn = sqlite3.connect(m.index.path)
    try:
        sql = "SELECT count(*) FROM sources WHERE kind = 'session' AND session = 'rep'"
        return conn.execute(sql + " AND record % 2 = 0").fetchone()[0]
    finally:
        conn.close()


def test_the_rows_are_deleted_a_slice_a_writer_job_others_running_between(md, monkeypatch):
    monkeypatch.setattr(purgeslices, "CHUNK_ROWS", 20)
    monkeypatch.setattr(purgeslices, "SLICE_SECONDS", 0.0)  # one chunk a slice
    assert rows_of_rep(md) == COPIES
    order: list[str] = []
    seen: dict = {}
    real = purgeslices._slice

    def watched(index) -> bool:
        if not order:  # the first slice after the forget's own job: rows left, listed
            seen["left"] = rows_of_rep(md)
            listed = forgotten.held(md.home)
            keys = [f"session:rep:{r}" for r in range(0, 2 * COPIES, 2)]
            seen["unlisted"] = [key for key in keys if key not in listed]
            seen["recalled"] = TEXT in md.recall("ficus plant tuesday")
            md.service._writer.submit(WRITE, order.append, "another write")
        order.append("slice")
        return real(index)

    monkeypatch.setattr(purgeslices, "_slice", watched)
    said = json.loads(md.admin("forget", {"id": "session:rep:0"}))["message"]
    assert said.startswith("forgot record 0 of session rep"), said
    assert 0 < seen["left"] < COPIES, seen
    assert seen["unlisted"] == []  # every key listed before a row of it is deleted
    assert seen["recalled"] is False  # a row left is not recalled meanwhile
    assert order.count("slice") > 2
    assert "another write" in order[:-1], order  # the writer was given back between slices
    assert rows_of_rep(md) == 0
    assert purgeslices.left(md.index) == 0


def test_a_forget_of_few_rows_deletes_them_in_its_own_job(md):
    md.say("one", "a lone remark about quinces")
    json.loads(md.admin("forget", {"id": "session:one:0"}))
    assert purgeslices.left(md.index) == 0
    assert "lone remark" not in md.recall("quinces")


def test_a_rowid_no_longer_of_its_key_is_left_and_the_key_looked_for(md):
    from memoryd.data import purge

    md.say("other", "a remark about medlars that stays")
    conn = sqlite3.connect(md.index.path)
    try:
        sql = "SELECT rowid FROM sources WHERE kind = 'session' AND session = ? AND record = 0"
        (stays,) = conn.execute(sql, ("other",)).fetchone()
        (rep0,) = conn.execute(sql, ("rep",)).fetchone()
    finally:
        conn.close()
    stale = {"session:rep:0": [stays]}  # found before, since given to another record's row
    md.service._writer.submit(WRITE, purge.purge, md.index, ["session:rep:0"], stale).result()
    conn = sqlite3.connect(md.index.path)
    try:
        held = {r[0] for r in conn.execute("SELECT rowid FROM sources")}
    finally:
        conn.close()
    assert stays in held
    assert rep0 not in held
