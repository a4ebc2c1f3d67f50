"""A session's label in the index never gets less strict than what memoryd has seen of it, whatever
is done to its log: rewritten as another file, changed in place before the offset read, removed
and made again (while memoryd runs or while it is stopped), through the catch-up, a start and a
reindex alike; and when the index itself is gone, memoryd's journal says which sessions wrote to
memory as untrusted (or at which class). An unchanged log still indexes exactly as before."""

import json
import logging
import os
import shutil
import sqlite3

import pytest

from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.writer import WRITE
from tests.callargs import loose_call
from tests.memoryd.owner_data_harness import Memoryd, _apply_call
from tests.memoryd.test_reindex import append, contents
from tests.recalling import recall_on

BEFORE = "What do the zebra release notes say?"
AFTER = "The zebra release moved to March."


def user(text: str) -> dict:
    return {"type": "user", "time": "2026-12-01T10:00:00Z", "content": text}


def said(text: str) -> dict:
    return {"type": "assistant", "time": "2026-12-01T10:00:05Z", "content": text}


def fetched(klass: str = "public", untrusted: bool = True) -> list[dict]:
    call = {"id": "c1", "name": "http_fetch", "arguments": '{"url": "https://example.org/n"}'}
    return [
        {"type": "assistant", "time": "2026-12-01T10:00:01Z", "tool_calls": [call]},
        {
            "type": "tool_result",
            "time": "2026-12-01T10:00:02Z",
            "call_id": "c1",
            "name": "http_fetch",
            "output": "release notes " * 50,
            "class": klass,
            "untrusted": untrusted,
        },
    ]


def rewritten(home: Home, session: str) -> None:
    """An editor's save without the tool_result lines: another file renamed over the log."""
    path = home.session_log(session)
    keep = [x for x in path.read_text().splitlines(True) if json.loads(x)["type"] != "tool_result"]
    path.with_name("0.jsonl.new").write_text("".join(keep))
    os.replace(path.with_name("0.jsonl.new"), path)


def in_place(home: Home, session: str) -> None:
    """The same cut made in the same file (it shrinks: changed before the offset read)."""
    path = home.session_log(session)
    keep = [x for x in path.read_text().splitlines(True) if json.loads(x)["type"] != "tool_result"]
    with open(path, "r+", encoding="utf-8") as f:
        f.write("".join(keep))
        f.truncate()


def made_again(home: Home, session: str) -> None:
    """The log removed (if it is still there) and a new one made under the same name, with no
    tool result."""
    home.session_log(session).unlink(missing_ok=True)
    append(home, session, [user(BEFORE), said(AFTER)])


def labels(home: Home, session: str, text: str) -> set[tuple[str, int]]:
    """The (class, untrusted) of the rows of session holding text."""
    conn = sqlite3.connect(home.index_db)
    try:
        return set(
            conn.execute(
                "SELECT s.class, s.untrusted FROM sources s JOIN hits h ON h.rowid = s.rowid"
                " WHERE s.session = ? AND h.text = ?",
                (session, text),
            )
        )
    finally:
        conn.close()


def opened(home: Home) -> Index:
    index = Index(home)
    index.open()
    return index


def tainted_session(home: Home, klass: str = "public") -> Index:
    append(home, "t1", [user(BEFORE), *fetched(klass), said(AFTER)])
    index = opened(home)
    index.catch_up_all()
    assert labels(home, "t1", AFTER) == {("private", 1)}
    assert labels(home, "t1", BEFORE) == {("private", 0)}
    return index


@pytest.mark.parametrize("edit", [rewritten, in_place])
@pytest.mark.parametrize(
    "then", ["catch-up", "restart", "reindex", "restart and reindex", "catch-up and reindex"]
)
def test_a_log_cut_of_its_untrusted_result_keeps_the_session_untrusted(
    tmp_path, caplog, edit, then
):
    home = Home(tmp_path / "home")
    index = tainted_session(home)
    edit(home, "t1")
    if "restart" in then:
        index.close()
        index = opened(home)
    try:
        with caplog.at_level(logging.WARNING, logger="memoryd"):
            if "catch-up" in then:
                index.catch_up_all()
            if "reindex" in then:
                index.reindex()
            else:
                index.catch_up_all()
        # Every record of the changed log is at least as strict as the label it had reached.
        assert labels(home, "t1", AFTER) == {("private", 1)}
        assert labels(home, "t1", BEFORE) == {("private", 1)}
        out = recall_on(index, "zebra release", 10, session="s-test").text
        assert out.startswith("[1] memory-tainted · session t1")
        assert "[2] memory-tainted · session t1" in out
    finally:
        index.close()
    lines = [r.getMessage() for r in caplog.records if "private, untrusted" in r.getMessage()]
    assert lines and all(str(home.session_log("t1")) in line for line in lines)


@pytest.mark.parametrize("then", ["catch-up", "reindex"])
def test_a_log_cut_of_its_secret_result_keeps_its_later_records_out(tmp_path, then):
    home = Home(tmp_path / "home")
    append(home, "s1", [user(BEFORE), *fetched("secret", untrusted=False), said(AFTER)])
    index = opened(home)
    try:
        index.catch_up_all()
        assert labels(home, "s1", AFTER) == set()  # above max_class private: not indexed
        rewritten(home, "s1")
        index.reindex() if then == "reindex" else index.catch_up_all()
        assert labels(home, "s1", AFTER) == set()
        assert labels(home, "s1", BEFORE) == set()
    finally:
        index.close()


@pytest.mark.parametrize("stopped", [False, True])
@pytest.mark.parametrize("then", ["catch-up", "reindex"])
def test_a_log_removed_and_made_again_keeps_the_label_memoryd_saw(tmp_path, stopped, then):
    home = Home(tmp_path / "home")
    index = tainted_session(home)
    if stopped:
        index.close()
        shutil.rmtree(home.sessions / "t1")  # removed while memoryd was stopped
        index = opened(home)
    else:
        home.session_log("t1").unlink()
    try:
        index.catch_up_all()  # the start's catch-up finds it gone: its rows leave the index
        assert labels(home, "t1", AFTER) == set()
        made_again(home, "t1")
        if then == "reindex":
            index.reindex()
        else:
            index.catch_up_session("t1")
        assert labels(home, "t1", AFTER) == {("private", 1)}
    finally:
        index.close()


def test_a_log_replaced_while_its_session_runs_keeps_the_label(tmp_path):
    home = Home(tmp_path / "home")
    index = tainted_session(home)
    try:
        made_again(home, "t1")  # never seen missing: the next turn's catch-up finds another file
        index.catch_up_session("t1")
        assert labels(home, "t1", AFTER) == {("private", 1)}
    finally:
        index.close()


def test_a_removed_sessions_label_survives_a_reindex(tmp_path):
    home = Home(tmp_path / "home")
    index = tainted_session(home)
    try:
        shutil.rmtree(home.sessions / "t1")
        index.catch_up_all()
        index.reindex()  # the label left behind goes into the new file
        made_again(home, "t1")
        index.catch_up_session("t1")
        assert labels(home, "t1", AFTER) == {("private", 1)}
    finally:
        index.close()


def test_an_unchanged_log_indexes_exactly_as_before(tmp_path):
    home = Home(tmp_path / "home")
    index = tainted_session(home)
    try:
        append(home, "c1", [user("a clean session about lisbon")])
        index.catch_up_all()
        before = contents(home.index_db)
        index.reindex()
        assert contents(home.index_db) == before
        assert labels(home, "t1", BEFORE) == {("private", 0)}
    finally:
        index.close()


def _journalled(tmp_path, taint: str = "private", untrusted: bool = True) -> Memoryd:
    """A memoryd whose journal holds session t1's add as taint (untrusted)."""
    m = Memoryd(tmp_path / "home")
    args = {"action": "add", "file": "user", "text": "Owner follows the beta."}
    who = {"session": "t1", "call_id": "call-9", "taint": taint, "untrusted": untrusted}
    parsed, caller = loose_call(json.dumps(args), **who)
    m.service._writer.submit(WRITE, _apply_call, m.service, parsed, caller).result()
    return m


@pytest.mark.parametrize("then", ["catch-up", "index removed", "reindex"])
def test_a_log_that_shows_less_than_the_journal_takes_the_journals_label(tmp_path, caplog, then):
    m = _journalled(tmp_path)
    home = m.home
    try:
        # The log as the owner left it: no tool result at all, though memoryd journalled t1's
        # add as untrusted.
        append(home, "t1", [user(BEFORE), said(AFTER)])
        if then == "index removed":
            m.close()
            shutil.rmtree(home.index_dir)
            m = Memoryd(home.root)
        with caplog.at_level(logging.WARNING, logger="memoryd"):
            if then == "reindex":
                m.index.reindex()
            else:
                m.service._writer.submit(WRITE, m.index.catch_up_session, "t1").result()
        assert labels(home, "t1", AFTER) == {("private", 1)}
        assert labels(home, "t1", BEFORE) == {("private", 1)}
        assert any("journal" in r.getMessage() and "t1" in r.getMessage() for r in caplog.records)
    finally:
        m.close()


def test_a_session_journalled_as_secret_is_not_indexed_as_private(tmp_path):
    m = _journalled(tmp_path, taint="secret", untrusted=False)
    try:
        append(m.home, "t1", [user(BEFORE), said(AFTER)])
        m.service._writer.submit(WRITE, m.index.catch_up_session, "t1").result()
        assert labels(m.home, "t1", AFTER) == set()
    finally:
        m.close()


def test_the_journal_is_followed_as_it_grows(tmp_path):
    """A session whose log memoryd already read clean, journalled untrusted afterwards, is
    read again at the journal's label when its log next grows; a clean session is not."""
    m = Memoryd(tmp_path / "home")
    try:
        m.say("t1", BEFORE)
        m.say("c1", "a clean session about lisbon")
        assert labels(m.home, "t1", BEFORE) == {("private", 0)}
        m.call({"action": "add", "file": "user", "text": "Owner likes miso."}, session="c1")
        m.call(
            {"action": "add", "file": "user", "text": "Owner follows the beta."},
            tainted=True,
            session="t1",
        )
        m.say("t1", AFTER)
        m.say("c1", "and porto too")
        assert labels(m.home, "t1", AFTER) == {("private", 1)}
        assert labels(m.home, "t1", BEFORE) == {("private", 1)}
        assert labels(m.home, "c1", "and porto too") == {("private", 0)}
    finally:
        m.close()


def test_a_tainted_session_whose_log_agrees_with_the_journal_is_not_read_again(tmp_path, caplog):
    m = Memoryd(tmp_path / "home")
    try:
        append(m.home, "t1", [user(BEFORE), *fetched()])
        m.call(
            {"action": "add", "file": "user", "text": "Owner follows the beta."},
            tainted=True,
            session="t1",
        )
        with caplog.at_level(logging.WARNING, logger="memoryd"):
            m.say("t1", AFTER)
            m.index.reindex()
        assert labels(m.home, "t1", BEFORE) == {("private", 0)}  # before the fetch: trusted
        assert labels(m.home, "t1", AFTER) == {("private", 1)}
        assert not [r for r in caplog.records if "journal" in r.getMessage()]
    finally:
        m.close()


@pytest.mark.parametrize("how", ["settings changed", "damaged"])
def test_an_index_started_anew_keeps_the_labels_the_old_one_held(tmp_path, how):
    """An index memoryd starts anew at open (built with other settings, or damaged where its
    tables still read) keeps the sessions' labels the old file held: a log rewritten meanwhile,
    of a session that never wrote to memory (so the journal knows nothing of it), stays as strict
    as memoryd had seen it."""
    home = Home(tmp_path / "home")
    tainted_session(home).close()
    rewritten(home, "t1")
    if how == "damaged":
        conn = sqlite3.connect(home.index_db)
        conn.execute("DROP TABLE hits")  # the index's own damage check refuses a file without it
        conn.commit()
        conn.close()
        index = opened(home)
    else:
        index = Index(home, max_record_bytes=4096)
        index.open()
    try:
        index.catch_up_all()
        assert labels(home, "t1", AFTER) == {("private", 1)}
        assert labels(home, "t1", BEFORE) == {("private", 1)}
    finally:
        index.close()


def test_a_removed_sessions_label_survives_an_index_started_anew(tmp_path):
    home = Home(tmp_path / "home")
    index = tainted_session(home)
    shutil.rmtree(home.sessions / "t1")
    index.catch_up_all()  # its rows leave the index, its label stays behind
    index.close()
    index = Index(home, max_record_bytes=4096)  # other settings: the file is started anew
    index.open()
    try:
        index.catch_up_all()
        made_again(home, "t1")
        index.catch_up_session("t1")
        assert labels(home, "t1", AFTER) == {("private", 1)}
    finally:
        index.close()


@pytest.mark.parametrize("then", ["catch-up", "reindex"])
def test_a_log_copied_whole_keeps_each_records_own_label(tmp_path, then):
    """A log that is another file holding the same records (the home copied to another disk or
    machine, an editor's save that changed nothing of its tool results) is read again with each
    record's own label, as a reindex reads it: what was said before the fetch stays trusted."""
    home = Home(tmp_path / "home")
    index = tainted_session(home)
    path = home.session_log("t1")
    copy = path.with_name("0.jsonl.copy")
    shutil.copyfile(path, copy)
    os.replace(copy, path)
    try:
        index.reindex() if then == "reindex" else index.catch_up_all()
        assert labels(home, "t1", BEFORE) == {("private", 0)}
        assert labels(home, "t1", AFTER) == {("private", 1)}
    finally:
        index.close()
