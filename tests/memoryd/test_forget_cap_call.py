"""A forgotten text said again as a tool call's argument stays out of the index after the owner
changed [index] max_record_bytes, as it does said again as a message: the forget's cut digests
(forgetcuts.py) are checked against each text a call wrote, not only the call's row ("name
{arguments}", which never begins as the text does), and against the argument the cap cut short
(data/matching.py holds_forgotten): a web search's query and a memory call's text."""

import json

import pytest

from memoryd.index import indexer
from memoryd.index.settings import Settings
from proto.messages import ToolCall
from proto.records import AssistantRecord, append_session_record
from tests.memoryd.owner_data_harness import Memoryd, T

LONG = " ".join(f"clause{n} of the private agreement" for n in range(150))  # some 5,000 bytes


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def _called(m: Memoryd, session: str, name: str, arguments: dict, cap: int) -> list[str]:
    """A call said in a new session, read by the index under cap: what its record's rows are."""
    log = m.home.session_log(session)
    log.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    call = ToolCall(id="c1", name=name, arguments=json.dumps(arguments))
    append_session_record(log, AssistantRecord(time=T, tool_calls=[call]))

    def run() -> None:
        conn = m.index._write()
        with m.index._transaction(conn):
            indexer.drop_log(conn, session)
            indexer.index_session_part(conn, m.home, session, Settings(max_record_bytes=cap))

    m.service._writer.submit(0, run).result()
    with m.index.reader() as conn:
        return [
            text
            for (text,) in conn.execute(
                "SELECT h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
                " WHERE s.kind = 'session' AND s.session = ?",
                (session,),
            )
        ]


CALLS = [
    ("web_search", lambda text: {"query": text}),
    ("memory", lambda text: {"action": "add", "file": "memory", "text": text}),
]


@pytest.mark.parametrize("cap", [1024, 3000, 1 << 20])
@pytest.mark.parametrize(("name", "arguments"), CALLS, ids=[c[0] for c in CALLS])
def test_said_again_as_a_calls_argument_after_the_cap_changed_it_stays_out(
    md, cap, name, arguments
):
    md.say("first", LONG, "Noted.")
    md.data("forget", id="session:first:0")
    assert _called(md, "again", name, arguments(LONG), cap) == []


def test_a_call_whose_argument_only_begins_as_the_forgotten_text_is_indexed(md):
    md.say("first", LONG, "Noted.")
    md.data("forget", id="session:first:0")
    other = LONG.encode()[:400].decode() + " then a different clause" * 40
    rows = _called(md, "again", "web_search", {"query": other}, 1024)
    assert len(rows) == 1 and rows[0].startswith('web_search {"query": "clause0')
