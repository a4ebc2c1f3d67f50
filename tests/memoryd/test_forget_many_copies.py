"""Forget of a text many records hold (an owner who says the same request every day): its keys and
digests go to forgotten.jsonl in one read of the file and one append, not a read and an fsync per
key (48,000 copies took an hour, the writer held all along); every record that held it leaves the
index, its other rows with it, and the records around it stay. A crash that tears that one append
is mended from the journal at the next start, as a torn line always was."""

import logging

import pytest

from memoryd.journal import forgetread, forgotten, forgottenlines, forgottenwrite
from tests.memoryd.owner_data_harness import Memoryd

REQUEST = "remind me to water the plants on the balcony"
COPIES = 120


class Killed(Exception):
    """memoryd killed: nothing after it runs."""


def _said_daily(m: Memoryd) -> None:
    """COPIES records of the request, each followed by an answer that differs."""
    for day in range(COPIES // 20):
        texts = []
        for n in range(20):
            texts += [REQUEST, f"done, reminder {day * 20 + n} set"]
        m.say(f"day-{day:03d}", *texts)


def _rows(m: Memoryd) -> list[tuple[str, int, str]]:
    with m.index.reader() as conn:
        return conn.execute(
            "SELECT s.session, s.record, h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
            " WHERE s.kind = 'session' ORDER BY s.session, s.record"
        ).fetchall()


def test_a_text_many_records_hold_is_listed_in_one_read_and_one_append(tmp_path, monkeypatch):
    m = Memoryd(tmp_path / "home")
    try:
        _said_daily(m)
        reads, appends = [], []
        parse = forgottenlines.parse_whole
        # the readers' parse and mend's (both read the file through forgottenlines)
        monkeypatch.setattr(
            forgottenlines, "parse_whole", lambda data: reads.append(1) or parse(data)
        )
        append = forgottenwrite.append_lines
        monkeypatch.setattr(
            forgottenwrite,
            "append_lines",
            lambda where, lines: appends.append(lines) or append(where, lines),
        )
        answer = m.data("forget", id="session:day-000:0")
        assert answer["message"].startswith("forgot record 0 of session day-000")
        assert len(reads) <= 3  # not one per key
        [lines] = appends
        assert len(lines) == COPIES + 1  # every key, then the digest
        assert '"digest"' in lines[-1]
        listed = forgotten.held(m.home)
        for day in range(COPIES // 20):
            assert {forgotten.session_key(f"day-{day:03d}", 2 * n) for n in range(20)} <= listed
        rows = _rows(m)
        assert not [row for row in rows if row[2] == REQUEST]
        assert len(rows) == COPIES  # every answer stays
    finally:
        m.close()


def _torn(where, lines):
    """The one append cut by a crash: its first half on disk, the last line of it torn."""
    data = "\n".join(lines).encode()
    with open(where, "ab") as f:
        f.write(data[: len(data) // 2])
    raise Killed


def test_a_torn_append_of_the_keys_is_mended_from_the_journal_at_start(
    tmp_path, monkeypatch, caplog
):
    m = Memoryd(tmp_path / "home")
    try:
        _said_daily(m)
        with monkeypatch.context() as patch:
            patch.setattr(forgottenwrite, "append_lines", _torn)
            with pytest.raises(Killed):
                m.admin("forget", {"id": "session:day-000:0"})
    finally:
        m.close()
    journal = forgetread.forgets(m.home)
    assert len(journal.last) == COPIES
    assert not journal.last <= forgotten.held(m.home)  # the file lacks the torn half
    with caplog.at_level(logging.INFO):
        forgottenwrite.mend(m.home)  # as the start does, before the writer runs
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("damaged" in line and "keys it lacked written back" in line for line in said)
    assert any("session day-000 stopped part way" in line for line in said)
    assert journal.last <= forgotten.held(m.home)
    assert journal.last_texts <= forgotten.held_texts(m.home)
    m = Memoryd(tmp_path / "home")
    try:
        m.data("forget", id="session:day-000:0")  # run again, it finishes
        assert not [row for row in _rows(m) if row[2] == REQUEST]
    finally:
        m.close()
