"""forget of a session record takes everything the record carries, from every place memoryd holds
it: a tool call's record is indexed as "name arguments", and what the call wrote stands alone
elsewhere (a recall's query in the recall log, a memory call's text in a later session's call or
message). Forgetting the record forgets those texts too, so none of them stays in the recall log
or comes back from a later log or a reindex; an identical call is left out too."""

import json
import shutil

import pytest

from memoryd.journal import forgotten
from proto.messages import ToolCall
from proto.records import AssistantRecord, append_session_record
from tests.memoryd.owner_data_harness import Memoryd, T

SECRET = "my bank pin is 4471"


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()
    shutil.rmtree(tmp_path / "home", ignore_errors=True)


def _log(m: Memoryd, session: str, record) -> None:
    path = m.home.session_log(session)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    append_session_record(path, record)
    m.service._writer.submit(0, m.index.catch_up_session, session).result()


def called(m: Memoryd, session: str, name: str, args: dict) -> None:
    call = ToolCall(id="c1", name=name, arguments=json.dumps(args))
    _log(m, session, AssistantRecord(time=T, tool_calls=[call]))


def _rows(m: Memoryd) -> list[tuple[str, str]]:
    with m.index.reader() as conn:
        sql = "SELECT s.role, h.text FROM hits h JOIN sources s ON s.rowid = h.rowid"
        return list(conn.execute(sql))


@pytest.mark.parametrize(
    "name, args, said",
    [
        ("recall", {"query": SECRET}, SECRET),
        ("memory", {"action": "note", "text": SECRET}, SECRET),
        ("shell", {"command": "echo 4471 > pin.txt"}, None),  # no argument memoryd writes
    ],
    ids=["recall call", "memory call", "other call"],
)
def test_a_forgotten_call_stays_out_of_the_index_from_every_later_log(md, name, args, said):
    called(md, "one", name, args)
    shown = md.data("forget", id="session:one:0", dry_run=True)
    md.data("forget", id="session:one:0", check=shown["check"])
    called(md, "two", name, args)  # the same call in a later session
    if said is not None:
        md.say("three", said)  # what the call wrote, said alone
    md.say("four", "Noted.")
    row = f"{name} {json.dumps(args)}"
    for rebuilt in (False, True):
        if rebuilt:
            md.index.reindex()
        texts = [text for _, text in _rows(md)]
        assert row not in texts and (said is None or said not in texts), texts
        assert "Noted." in texts
    assert md.admin("search", {"query": "4471", "k": 10}).startswith("(no matches")


def test_forgetting_a_recall_call_takes_its_query_out_of_the_recall_log(md):
    md.recall(SECRET)  # the agent's recall, logged with its query
    md.recall("something else")
    called(md, "one", "recall", {"query": SECRET})
    done = md.data("forget", id="session:one:0")
    assert "1 recall log line" in done["message"], done["message"]
    queries = [
        json.loads(line)["query"]
        for path in md.home.recalls.iterdir()
        for line in path.read_text().splitlines()
    ]
    assert SECRET not in queries and "something else" in queries
    assert all(SECRET not in p.read_text() for p in md.home.recalls.iterdir())
    assert forgotten.digest(SECRET) in forgotten.digests(md.home)


@pytest.mark.parametrize(
    "args",
    [
        {"action": "remove", "file": "user", "old": "Prefers tea."},
        {"action": "replace", "file": "user", "old": "Prefers tea.", "text": "Prefers coffee."},
    ],
    ids=["remove", "replace"],
)
def test_forgetting_a_call_record_leaves_the_entry_its_old_only_named(md, args):
    """An old names an entry already there, written by another session: forgetting the record
    of the call that named it takes what that call wrote, never the other's entry."""
    md.call({"action": "add", "file": "user", "text": "Prefers tea."}, session="a")
    called(md, "b", "memory", args)
    shown = md.data("forget", id="session:b:0", dry_run=True)
    assert "Prefers tea." not in shown["texts"]
    md.data("forget", id="session:b:0", check=shown["check"])
    assert "Prefers tea." in md.home.memory_file("user.md").read_text()
