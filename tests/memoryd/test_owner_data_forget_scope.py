"""forget's reach: exactly the text it names, in every place that holds it and no other.

The session record of the memory call that wrote an entry holds the entry's text too: it leaves
the index with the entry, and stays out through a reindex, even one that was building when the
forget came. A text is matched whole (never "ok" inside "a book"), and only where something
written is held (never a journal line's action, file or class)."""

import json
import shutil

import pytest

from memoryd.data import matching
from memoryd.errors import AdminRefused
from memoryd.journal import forgotten, forgottenmarker
from proto.messages import ToolCall
from proto.records import AssistantRecord, UserRecord, append_session_record
from tests.memoryd.owner_data_harness import Memoryd, T

SECRET = "Locker code is 4711."


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()
    shutil.rmtree(tmp_path / "home", ignore_errors=True)


def called(m: Memoryd, session: str, name: str, args: dict, catch_up: bool = True) -> None:
    """The assistant's record of a tool call in a session's log, as loopd writes it."""
    m.home.session_log(session).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    call = ToolCall(id="c1", name=name, arguments=json.dumps(args))
    append_session_record(m.home.session_log(session), AssistantRecord(time=T, tool_calls=[call]))
    if catch_up:
        m.service._writer.submit(0, m.index.catch_up_session, session).result()


def in_index(m: Memoryd, text: str) -> bool:
    with m.index.reader() as conn:
        return any(text in row for (row,) in conn.execute("SELECT text FROM hits"))


def gone_everywhere(m: Memoryd, text: str) -> None:
    assert not in_index(m, text)
    assert text not in m.admin("search", {"query": "locker code", "k": 10})
    assert text not in m.recall("locker code")
    assert text.encode() not in m.home.index_db.read_bytes()


ADD = {"action": "add", "file": "memory", "text": SECRET}


@pytest.mark.parametrize(
    "ref, write, indexed",
    [
        ("memory.md:1", ADD, True),
        ("memory.md:1", ADD, False),  # the call's record not yet indexed when forget runs
        ("note:0", {"action": "note", "text": SECRET}, True),
        (SECRET, ADD, True),
    ],
)
def test_the_record_of_the_call_that_wrote_it_leaves_the_index_for_good(md, ref, write, indexed):
    md.call(write)
    called(md, "s1", "memory", write, catch_up=indexed)
    md.say("s1", "Noted.")  # a later record of the same session: it stays
    if indexed:
        assert in_index(md, SECRET)
    shown = md.data("forget", id=ref, dry_run=True)
    assert "1 more session record" in shown["message"]
    done = md.data("forget", id=ref)
    assert "1 more session record" in done["message"]
    key = forgotten.session_key("s1", 0)
    assert key in forgotten.keys(md.home)
    gone_everywhere(md, SECRET)
    assert "Noted." in md.recall("noted")
    md.index.reindex()
    gone_everywhere(md, SECRET)


def test_a_recall_call_whose_query_is_the_text_goes_and_other_calls_stay(md):
    md.call(ADD)
    called(md, "s2", "recall", {"query": SECRET})
    called(md, "s2", "recall", {"query": "what is the Locker code is 4711. about"})
    called(md, "s3", "memory", {"action": "add", "file": "user", "text": "memory"})
    md.data("forget", id="memory.md:1")
    keys = forgotten.keys(md.home)
    assert forgotten.session_key("s2", 0) in keys
    assert forgotten.session_key("s2", 1) not in keys  # holds more than the text
    assert forgotten.session_key("s3", 0) not in keys
    assert "about" in md.admin("search", {"query": "about", "k": 10})


def test_a_forget_during_a_reindex_build_stays_forgotten_after_the_swap(md):
    md.say("s-j", "The vault combination is 31-7-44.", "Understood.")
    built = md.index.build_new()  # read the record before the forget
    md.data("forget", id="session:s-j:0")
    md.index.finish_new(built)
    assert md.recall("vault").startswith("(no matches")
    assert "Understood." in md.recall("understood")
    assert b"31-7-44" not in md.home.index_db.read_bytes()


def test_forget_matches_whole_texts_never_letters_inside_another(md):
    md.say("s1", "ok", "Done.")
    md.call({"action": "note", "text": "Owner reads a book a week."})
    md.store.review_on = True  # writes to memory.md wait for the owner
    md.call({"action": "add", "file": "user", "text": "Owner reads a book a week."})
    md.call({"action": "add", "file": "memory", "text": " ok "})
    md.recall("cookbook recommendations")
    md.recall("ok")
    md.service.recaller.close()
    done = md.data("forget", id="session:s1:0")
    assert "1 recall log line, 1 pending write" in done["message"]
    pending = md.home.memory_file("pending.jsonl").read_text()
    assert "a book a week" in pending and '" ok "' not in pending
    queries = [
        json.loads(line)["query"]
        for path in md.home.recalls.iterdir()
        for line in path.read_text().splitlines()
    ]
    assert "cookbook recommendations" in queries and "ok" not in queries
    assert "Owner reads a book a week." in md.home.memory_file("notes.md").read_text()
    assert "book" in md.recall("book")


@pytest.mark.parametrize("word", ["add", "memory.md", "private", "note", "Owner"])
def test_a_word_of_a_journal_field_names_nothing_to_forget(md, word):
    md.call({"action": "add", "file": "memory", "text": "Owner likes green tea."})
    md.call({"action": "note", "text": "Owner likes green tea too."})
    before = {p: p.read_bytes() for p in md.home.memory.rglob("*") if p.is_file()}
    with pytest.raises(AdminRefused, match="names nothing to forget"):
        md.admin("forget", {"id": word})
    assert {p: p.read_bytes() for p in md.home.memory.rglob("*") if p.is_file()} == before


def test_forgetting_an_entry_keeps_the_journal_fields_of_every_line(md):
    md.call({"action": "add", "file": "memory", "text": "add"})  # an entry that is a word
    md.call({"action": "add", "file": "memory", "text": "Second."})
    md.data("forget", id="add")
    lines = md.store.journal.records()
    assert [(r.action, r.file) for r in lines] == [
        ("add", "memory.md"),
        ("add", "memory.md"),
        ("forget", "memory.md"),
    ]
    assert forgottenmarker.is_marker(lines[0].after[0])
    assert lines[1].after[1] == "Second."


@pytest.mark.parametrize(
    "later",
    [
        lambda m: m.say("s-late", SECRET, "Got it."),  # said in a log read after the forget
        lambda m: called(m, "s-late", "memory", {"action": "note", "text": f"  {SECRET}"}),
        lambda m: called(m, "s-late", "recall", {"query": SECRET}),
    ],
    ids=["said", "memory call", "recall call"],
)
def test_a_forgotten_text_is_never_indexed_again_from_a_log_the_forget_did_not_see(md, later):
    """A log the forget could not read (memoryd may not read it yet, or a restore lays it
    later) may hold the text it forgot: when the index reads it, the text stays out, in the
    same whole-text terms forget matched it by; what only contains it is indexed."""
    md.say("s-first", SECRET)
    md.data("forget", id="session:s-first:0")
    later(md)
    md.say("s-late2", f"Not the {SECRET} itself", "Locker code is 4711")
    for rebuilt in (False, True):
        if rebuilt:
            md.index.reindex()
        rows = _rows(md)
        assert not [row for role, row in rows if matching.row_holds(role, row, SECRET)], rows
        texts = [row for _, row in rows]
        assert f"Not the {SECRET} itself" in texts and "Locker code is 4711" in texts


def _rows(m: Memoryd) -> list[tuple[str, str]]:
    with m.index.reader() as conn:
        sql = "SELECT s.role, h.text FROM hits h JOIN sources s ON s.rowid = h.rowid"
        return list(conn.execute(sql))


@pytest.mark.parametrize(
    "said_at",
    [
        "2026-09-24T20:59:59Z",  # before the forget (21:02): a log it could not read then
        "2026-09-24T21:30:00Z",  # after it, by loopd's clock: which may not be memoryd's
        "2001-01-01T00:00:00Z",  # a log from another machine, laid by a restore
    ],
)
def test_a_forgotten_text_stays_out_of_the_index_from_every_log_a_note_of_it_does_not(md, said_at):
    """No clock tells a record said before a forget from one said after, so the text stays out
    of the index from every session log; the owner who wants it remembered writes it as a note,
    which is indexed."""
    md.say("s-first", SECRET)
    md.data("forget", id="session:s-first:0")
    path = md.home.session_log("s-again")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    append_session_record(path, UserRecord(time=said_at, content=SECRET))
    md.service._writer.submit(0, md.index.catch_up_session, "s-again").result()
    assert SECRET not in md.recall("locker code")
    md.call({"action": "note", "text": SECRET})
    found = md.recall("locker code")
    assert SECRET in found and "memory · note" in found


def test_a_forgotten_text_in_a_call_the_index_cut_short_stays_out(md):
    """A call longer than the index keeps of a record (a consolidate of many entries): its
    arguments no longer parse, and the text is found in them written whole all the same."""
    md.say("s-first", SECRET)
    md.data("forget", id="session:s-first:0")
    entries = [{"old": f"entry {n} " + "x" * 200, "text": f"new {n}"} for n in range(400)]
    long = {"action": "consolidate", "file": "memory", "text": SECRET, "entries": entries}
    called(md, "s-long", "memory", long)
    rows = _rows(md)
    assert not [row for role, row in rows if role == "call" and SECRET in row], rows[:2]
