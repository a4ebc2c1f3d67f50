"""A session record whose text holds a NUL (a tool result or a message can) is forgotten like any
other: FTS5's query syntax cannot carry a NUL, so its rows are found by a scan, and the refused
query is never reported as a damaged index."""

import shutil

import pytest

from memoryd.data import matching
from memoryd.journal import forgotten
from proto.messages import ToolCall
from proto.records import AssistantRecord, UserRecord, append_session_record
from tests.memoryd.owner_data_harness import Memoryd, T


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


def _rows(m: Memoryd) -> list[tuple[str, str]]:
    with m.index.reader() as conn:
        sql = "SELECT s.role, h.text FROM hits h JOIN sources s ON s.rowid = h.rowid"
        return list(conn.execute(sql))


def _holding(m: Memoryd, text: str) -> list[str]:
    return [row for role, row in _rows(m) if matching.row_holds(role, row, text)]


@pytest.mark.parametrize(
    "record",
    [
        UserRecord(time=T, content="zebracrossing one\x00two"),
        AssistantRecord(
            time=T,
            tool_calls=[ToolCall(id="c1", name="recall", arguments='{"query": "zebra\\u0000x"}')],
        ),
    ],
    ids=["message", "call"],
)
def test_a_record_holding_a_nul_is_forgotten_and_the_index_is_not_blamed(md, record):
    _log(md, "nul1", record)
    md.say("nul1", "zebracrossing at noon")  # record 1: it stays
    assert _rows(md)
    shown = md.data("forget", id="session:nul1:0", dry_run=True)
    done = md.data("forget", id="session:nul1:0", check=shown["check"])
    assert done["id"] == "session:nul1:0"
    assert "session:nul1:0" in forgotten.keys(md.home)
    texts = [text for _, text in _rows(md)]
    assert texts == ["zebracrossing at noon"], texts
    _log(md, "nul2", record)  # said again: it stays out
    md.index.reindex()
    assert [text for _, text in _rows(md)] == ["zebracrossing at noon"]


def test_a_text_holding_a_nul_that_only_the_index_holds_is_forgotten_by_its_words(md):
    _log(md, "nul1", UserRecord(time=T, content="zebracrossing one\x00two"))
    md.data("forget", id="zebracrossing one\x00two")
    assert _holding(md, "zebracrossing one\x00two") == []
    assert "session:nul1:0" in forgotten.keys(md.home)
