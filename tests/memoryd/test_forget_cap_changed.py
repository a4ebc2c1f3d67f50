"""A forgotten session record stays out of the index when the same text is said again in another
session after the owner changed [index] max_record_bytes, lowered or raised: the forget lists the
digests of the text's first bytes as every cap would cut them (forgetcuts.py), and the indexer
leaves out a row that is the forgotten text cut elsewhere. A text that only begins as the
forgotten one did is indexed; a forget line written before those digests keeps out what it did."""

import json

import pytest

from memoryd.data import matching
from memoryd.index import indexer
from memoryd.index.settings import Settings
from memoryd.journal import forgetcuts, forgotten
from tests.memoryd.owner_data_harness import Memoryd

LONG = " ".join(f"clause{n} of the private agreement" for n in range(150))  # some 5,000 bytes
LOW = 1024
HIGH = 1 << 20


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def _record_rows(m: Memoryd, session: str, record: int) -> list[str]:
    with m.index.reader() as conn:
        return [
            text
            for (text,) in conn.execute(
                "SELECT h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
                " WHERE s.kind = 'session' AND s.session = ? AND s.record = ?",
                (session, record),
            )
        ]


def _index_again(m: Memoryd, session: str, cap: int) -> None:
    """The session's log indexed again from its start under another max_record_bytes."""

    def run() -> None:
        conn = m.index._write()
        with m.index._transaction(conn):
            indexer.drop_log(conn, session)
            indexer.index_session_part(conn, m.home, session, Settings(max_record_bytes=cap))

    m.service._writer.submit(0, run).result()


def _said_again(m: Memoryd, text: str, cap: int) -> list[str]:
    """text said in a new session, read by the index under cap: what its record's rows are."""
    m.say("again", text, "Fine.")
    _index_again(m, "again", cap)
    assert _record_rows(m, "again", 1) == ["Fine."]
    return _record_rows(m, "again", 0)


def test_said_again_after_the_cap_was_lowered_it_stays_out(md):
    md.say("first", LONG, "Noted.")
    md.data("forget", id="session:first:0")
    assert _said_again(md, LONG, LOW) == []


def test_said_again_after_the_cap_was_raised_it_stays_out(md):
    md.say("first", LONG, "Noted.")
    _index_again(md, "first", LOW)  # the forget takes the record as the index cut it
    md.data("forget", id="session:first:0")
    assert _said_again(md, LONG, HIGH) == []


def test_said_again_under_the_same_cap_it_stays_out(md):
    md.say("first", LONG, "Noted.")
    md.data("forget", id="session:first:0")
    assert _said_again(md, LONG, indexer.RECORD_BYTES) == []


def test_a_text_that_only_begins_as_the_forgotten_one_is_indexed(md):
    """A template: its first 2,500 bytes are the forgotten text's, the rest is another's."""
    md.say("first", LONG, "Noted.")
    md.data("forget", id="session:first:0")
    other = LONG.encode()[:2500].decode() + " then a different clause" * 40
    assert _said_again(md, other, indexer.RECORD_BYTES) == [other]


def test_a_forget_line_without_the_cut_digests_keeps_its_exact_text_out(md):
    """An older memoryd's forget listed the digest of the text alone: the same text stays out,
    as it did, and the cut digests are not needed for that."""
    line = {"digest": forgotten.digest(LONG), "time": "2026-09-24T20:00Z", "edit": "2026-09-24-1"}
    forgotten.path(md.home).write_text(json.dumps(line) + "\n")
    assert _said_again(md, LONG, indexer.RECORD_BYTES) == []


def test_the_cut_digests_are_never_a_whole_texts():
    """A text exactly as long as a rung is listed by both digests, each of its own kind: a text
    equal to a forgotten one's first kilobyte is not taken for it."""
    head = LONG.encode()[: forgetcuts.LEAST_CUT].decode()
    listed = frozenset([forgotten.digest(LONG), *forgetcuts.cuts(LONG)])
    assert forgotten.digest(head) not in listed
    assert forgetcuts.cuts(head)[0] in listed
    assert not matching.holds_forgotten("user", head, listed, indexer.RECORD_BYTES)
    assert matching.holds_forgotten("user", head, listed, LOW)  # what a cap of 1024 keeps of it
