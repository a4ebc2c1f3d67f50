"""A forget's session key (session:ID:N) outlives the log it was made in: the owner clears old logs,
or moves to a new machine with a backup that holds forgotten.jsonl, and starts a session of the same
name again. The digests of what the forget took keep that text out of the index from every log, so
the key alone no longer drops what the new log says under that number; it still does for a forget
that listed no digest (an older memoryd's), which the key alone names."""

import json
import shutil

import pytest

from memoryd.index import indexer
from memoryd.index.settings import Settings
from memoryd.journal import forgotten, keptout
from tests.memoryd.owner_data_harness import Memoryd

OLD = "My old locker code is 1234."
NEW = "The garden needs watering every Sunday evening."


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


def _clear_log(m: Memoryd, session: str) -> None:
    """The owner removes the session's folder; the index lets go of its rows."""
    shutil.rmtree(m.home.session_log(session).parent)
    m.service._writer.submit(0, m.index.drop_removed, []).result()


def _forgotten_monday(m: Memoryd) -> None:
    m.say("monday", OLD, "Noted.")
    m.data("forget", id="session:monday:0")
    assert "session:monday:0" in forgotten.keys(m.home)


def test_a_new_log_of_the_same_name_is_indexed_under_a_forgotten_number(md):
    _forgotten_monday(md)
    _clear_log(md, "monday")
    md.say("monday", NEW, "I will remind you about the garden.")
    assert _record_rows(md, "monday", 0) == [NEW]
    assert "session:monday:0" not in keptout.hiding(md.home)


def test_a_new_home_with_the_old_forgotten_file_indexes_the_new_log(md, tmp_path):
    _forgotten_monday(md)
    md.close()
    new = tmp_path / "new"
    shutil.copytree(md.home.memory, new / "memory")  # what a backup without sessions carries
    m = Memoryd(new)
    try:
        m.say("monday", NEW, "I will remind you about the garden.")
        assert _record_rows(m, "monday", 0) == [NEW]
        m.say("tuesday", OLD, "Noted.")  # the forgotten text stays out, from any log
        assert _record_rows(m, "tuesday", 0) == []
    finally:
        m.close()


def test_the_forgotten_text_said_again_under_the_same_number_stays_out(md):
    _forgotten_monday(md)
    _clear_log(md, "monday")
    md.say("monday", OLD, "Noted again.")
    assert _record_rows(md, "monday", 0) == []
    assert _record_rows(md, "monday", 1) == ["Noted again."]


def test_a_key_without_a_digest_of_its_forget_still_drops_the_record(md):
    """An older memoryd's forget line listed the key alone: nothing else says what it took."""
    line = {"key": "session:monday:0", "time": "2026-09-24T20:00Z", "edit": "2026-09-24-0001"}
    forgotten.path(md.home).write_text(json.dumps(line) + "\n")
    md.say("monday", NEW, "I will remind you about the garden.")
    assert _record_rows(md, "monday", 0) == []
    assert "session:monday:0" in forgotten.alone(md.home)
    assert "session:monday:0" in keptout.hiding(md.home)


@pytest.mark.parametrize("edit", ["journal", "restore", "2026-09-24-0009"])
def test_a_key_whose_line_names_no_forget_with_digests_still_drops(md, edit):
    """Written back from the journal, carried by a restore, or a digest line of another forget:
    no digest line shares the key line's edit and time."""
    digest = {"digest": forgotten.digest(OLD), "time": "2026-09-24T20:00Z", "edit": "2026-09-24-1"}
    key = {"key": "session:monday:0", "time": "2026-09-24T20:00Z", "edit": edit}
    lines = [json.dumps(key), json.dumps(digest)]
    forgotten.path(md.home).write_text("\n".join(lines) + "\n")
    assert "session:monday:0" in forgotten.alone(md.home)


def test_rows_condition_takes_the_forgotten_rows_and_leaves_the_new_log(md):
    _forgotten_monday(md)
    _clear_log(md, "monday")
    md.say("monday", NEW, "I will remind you about the garden.")
    with md.index.reader() as conn:
        assert keptout.rows_condition(conn, md.home) is None
    # rows indexed before a forget listed them (a rebuild read them first): taken by the digest
    # of what they hold, or whole for a key without one
    md.say("other", "The vault combination is 31-7-44.", "Understood.")
    md.say("older", "Some words an older memoryd forgot.", "Fine.")
    when, edit = "2026-09-24T20:00Z", "2026-09-24-0007"
    lines = [
        {"key": "session:other:0", "time": when, "edit": edit},
        {
            "digest": forgotten.digest("The vault combination is 31-7-44."),
            "time": when,
            "edit": edit,
        },
        {"key": "session:older:0", "time": when, "edit": "2026-09-24-0003"},
    ]
    with forgotten.path(md.home).open("a") as f:
        f.writelines(json.dumps(line) + "\n" for line in lines)
    with md.index.reader() as conn:
        where, params = keptout.rows_condition(conn, md.home)
        sql = f"SELECT session, record FROM sources WHERE {where}"
        assert sorted(conn.execute(sql, params)) == [("older", 0), ("other", 0)]


LONG = " ".join(f"word{n} of the long record" for n in range(200))  # some 5,000 bytes


def _index_again(m: Memoryd, session: str, cap: int) -> None:
    """The session's log indexed again from its start under another max_record_bytes."""

    def run() -> None:
        conn = m.index._write()
        with m.index._transaction(conn):
            indexer.drop_log(conn, session)
            indexer.index_session_part(conn, m.home, session, Settings(max_record_bytes=cap))

    m.service._writer.submit(0, run).result()


def test_a_cap_raised_after_the_forget_brings_no_part_of_a_cut_record_back(md):
    md.say("long", LONG, "Fine.")
    _index_again(md, "long", 1024)  # the forget takes the record as the index cut it
    md.data("forget", id="session:long:0")
    _index_again(md, "long", 1 << 20)
    assert _record_rows(md, "long", 0) == []
    assert _record_rows(md, "long", 1) == ["Fine."]


def test_a_cap_lowered_after_the_forget_brings_no_part_of_a_record_back(md):
    md.say("long", LONG, "Fine.")
    md.data("forget", id="session:long:0")
    _index_again(md, "long", 1024)
    assert _record_rows(md, "long", 0) == []
    assert _record_rows(md, "long", 1) == ["Fine."]
