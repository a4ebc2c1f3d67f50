"""A session log read again from its start (another file now, or changed before the byte the index
read) keeps its old rows in the index until the reading is whole, then is put in their place in
one transaction: between two parts recall finds the old log, never nothing; after, the new. The
index then holds what a reading of the new log into an empty index gives (rows, their order, the
context rows), and the rows of unchanged records keep their rowids (hybrid: their vectors)."""

import json
import os
import sqlite3

import pytest

from memoryd.home import Home, ensure_dir
from memoryd.index import indexer
from memoryd.index.index import Index
from memoryd.trust import risen
from tests.recalling import recall_on

PHONE = "0612345678"
N = 80


def _record(i: int, text: str | None = None) -> dict:
    time = f"2026-11-01T{i // 60:02d}:{i % 60:02d}:00Z"
    content = text or f"turn {i} about thing{i % 7} and ordinary matters"
    if i % 3:
        return {"type": "user", "time": time, "content": content}
    calls = [{"id": f"c{i}", "name": "clock", "arguments": "{}"}] if i % 5 == 0 else []
    return {
        "type": "assistant",
        "time": time,
        "content": content,
        "reasoning_content": None,
        "tool_calls": calls,
    }


def _lines() -> list[str]:
    lines = [json.dumps(_record(i)) for i in range(N)]
    lines[0] = json.dumps(_record(0, f"call me on {PHONE} tomorrow"))
    lines[-1] = json.dumps(_record(N - 1, "the marmalade recipe needs three oranges"))
    return lines


def _write(path, lines: list[str], in_place: bool = False) -> None:
    text = "".join(line + "\n" for line in lines)
    if in_place:  # the same file rewritten: "changed before byte"
        with open(path, "r+", encoding="utf-8") as f:
            f.write(text)
            f.truncate()
        return
    tmp = path.with_name("sedtmp")  # another file renamed over it, as sed -i does
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _home(tmp_path) -> Home:
    home = Home(tmp_path / "home")
    path = home.session_log("long")
    ensure_dir(path.parent)
    _write(path, _lines())
    return home


def _recall(index: Index, query: str) -> str:
    return recall_on(index, query, 5, session="probe").text


def _rows(home: Home) -> list[tuple]:
    conn = sqlite3.connect(home.index_db)
    try:
        return conn.execute(
            "SELECT s.rowid, s.record, s.role, h.text FROM sources s JOIN hits h"
            " ON h.rowid = s.rowid WHERE s.session = 'long' ORDER BY s.rowid"
        ).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("mode", ["spec", "context"])
@pytest.mark.parametrize("in_place", [False, True])
def test_recall_finds_the_old_log_until_its_reading_again_is_whole(
    tmp_path, monkeypatch, mode, in_place
):
    home = _home(tmp_path)
    index = Index(home, mode=mode)
    index.open()
    try:
        index.catch_up_session("long")
        before = _rows(home)
        monkeypatch.setattr(indexer, "PART_RECORDS", 10)
        # In place, a same-length edit far from the end is not seen: this one shortens the log.
        mark = "XXXX" if in_place else "XXXXXXXXXX"
        redacted = [line.replace(PHONE, mark) for line in _lines()]
        _write(home.session_log("long"), redacted, in_place)
        parts = 0
        done = False
        while not done:
            _, done = index.catch_up_session_part("long")
            parts += 1
            if done:
                break
            # Between two parts: the old log, whole, and nothing said to be missing.
            assert "marmalade recipe" in _recall(index, "marmalade")
            assert PHONE in _recall(index, "tomorrow")
        assert parts > 3
        assert "marmalade recipe" in _recall(index, "marmalade")
        out = _recall(index, "tomorrow")
        assert PHONE not in out and mark in out
        after = _rows(home)
        # Only the redacted record's row was written again, at its rowid.
        assert [r for r in after if r not in before] == [
            (before[0][0], 0, "assistant", f"call me on {mark} tomorrow")
        ]
        assert len(after) == len(before)
    finally:
        index.close()


def _cut(lines):
    return lines[:2] + lines[3:11] + lines[13:]


def _put_in(lines):
    return [*lines[:30], json.dumps(_record(900, "a line put in")), *lines[30:]]


def _many(lines):
    out = list(lines)
    for i in (3, 4, 20, 41, N - 2):
        out[i] = json.dumps(_record(i, f"changed {i}"))
    return out


def _mixed(lines):
    return [json.dumps(_record(0, "first")), *lines[1:5], *lines[6:40], *lines[40:50]]


def _other(lines):
    return [json.dumps(_record(500 + i)) for i in range(50)]


EDITS = [_cut, _put_in, _many, _mixed, _other, lambda lines: lines[:25]]


def _dump(home: Home) -> tuple[list, list]:
    conn = sqlite3.connect(home.index_db)
    try:
        rows = conn.execute(
            "SELECT s.kind, s.session, s.epoch, s.record, s.time, s.role, s.class, s.untrusted,"
            " h.text FROM sources s JOIN hits h ON h.rowid = s.rowid ORDER BY s.rowid"
        ).fetchall()
        context = conn.execute(
            "SELECT s.record, s.role, c.text, c.near, c.date FROM sources s"
            " JOIN context_hits c ON c.rowid = s.rowid ORDER BY s.rowid"
        ).fetchall()
        (count,) = conn.execute("SELECT count(*) FROM context_hits").fetchone()
        assert count == len(rows)
        return rows, context
    finally:
        conn.close()


@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("edit", EDITS)
def test_a_log_read_again_is_indexed_as_a_first_reading_of_it(
    tmp_path, monkeypatch, edit, in_place
):
    home = _home(tmp_path)
    ensure_dir(home.session_log("other").parent)
    _write(home.session_log("other"), [json.dumps(_record(i)) for i in range(6)])
    monkeypatch.setattr(indexer, "PART_RECORDS", 7)
    index = Index(home, mode="context")
    index.open()
    try:
        index.catch_up_all()
        _write(home.session_log("long"), edit(_lines()), in_place)
        with open(home.session_log("other"), "a", encoding="utf-8") as f:  # interleaved rows
            f.write(json.dumps(_record(7)) + "\n")
        index.catch_up_session("other")
        index.catch_up_session("long")
        got = _dump(home)
    finally:
        index.close()
    for leftover in home.index_dir.glob("memory.sqlite3*"):
        leftover.unlink()
    fresh = Index(home, mode="context")
    fresh.open()
    try:
        fresh.catch_up_session("other")
        fresh.catch_up_session("long")
        want = _dump(home)
    finally:
        fresh.close()
    assert [r for r in got[0] if r[1] == "long"] == [r for r in want[0] if r[1] == "long"]
    assert sorted(got[0]) == sorted(want[0])
    assert sorted(got[1]) == sorted(want[1])  # every neighbour column as a first reading's


def test_a_log_changed_again_during_its_reading_again_is_read_from_its_start(tmp_path, monkeypatch):
    home = _home(tmp_path)
    index = Index(home)
    index.open()
    try:
        index.catch_up_session("long")
        monkeypatch.setattr(indexer, "PART_RECORDS", 10)
        path = home.session_log("long")
        _write(path, [line.replace(PHONE, "XXXXXXXXXX") for line in _lines()])
        assert index.catch_up_session_part("long") == (0, False)
        _write(path, [line.replace(PHONE, "YYYYYYYYYY") for line in _lines()])
        index.catch_up_session("long")
        out = _recall(index, "tomorrow")
        assert "YYYYYYYYYY" in out and "XXXXXXXXXX" not in out and PHONE not in out
    finally:
        index.close()


def test_a_log_whose_reading_ends_laxer_than_its_session_was_seen_loses_no_row_meanwhile(
    tmp_path, monkeypatch
):
    """Read again at the label memoryd had seen of the session (the floor): every row takes it
    in the transaction that finds it, none is taken out of recall for a reading part by part."""
    home = _home(tmp_path)
    index = Index(home)
    index.open()
    try:
        index.catch_up_session("long")
        ensure_dir(home.memory)
        risen.rise(home, "long", ("private", True))  # memoryd saw the session untrusted
        with open(home.session_log("long"), "a", encoding="utf-8") as f:
            f.write(json.dumps(_record(N, "one more turn")) + "\n")
        monkeypatch.setattr(indexer, "PART_RECORDS", 10)
        index.catch_up_session_part("long")
        assert "marmalade recipe" in _recall(index, "marmalade")
        index.catch_up_session("long")
        conn = sqlite3.connect(home.index_db)
        try:
            found = conn.execute(
                "SELECT DISTINCT class, untrusted FROM sources WHERE session = 'long'"
            ).fetchall()
            (count,) = conn.execute(
                "SELECT count(*) FROM sources WHERE session = 'long'"
            ).fetchone()
        finally:
            conn.close()
        assert found == [("private", 1)]
        assert count == len(_rows(home)) and "one more turn" in _recall(index, "more turn")
    finally:
        index.close()
