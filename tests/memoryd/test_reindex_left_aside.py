"""A reindex counts among its logs only those the new index holds a reading of (wholly or up to a
damaged record), and its answer says how many logs it left aside (a FIFO, a log damaged at its
first record), as stats names them: an owner runs reindex to mend the index and reads its answer
as what is in. The answer on the wire stays the spec's body (a client holding the spec's schema
reads it); the counts of what was left out are memoryd's log line and stats' index state, which
bxctl reads after it. Real files, real SQLite; the answer as memoryd gives it on the owner
socket's handler and as it goes on the wire."""

import asyncio
import logging
import os
from pathlib import Path

import pytest

from proto.messages import Reindex, Reindexed, body_of, reindexed_line
from tests.memoryd.owner_data_harness import Memoryd

RECORD = '{"type":"user","time":"2026-12-01T10:00:00Z","content":"%s"}\n'


def log(m: Memoryd, session: str, text: str) -> None:
    path = m.home.session_log(session)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text(text)
    path.chmod(0o600)


@pytest.fixture
def home(tmp_path: Path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def reindexed(m: Memoryd) -> tuple[Reindexed, int]:
    """The answer and how many logs the index now holds left aside (stats' left_aside_total)."""
    answer = asyncio.run(m.service.on_admin(Reindex()))
    assert isinstance(answer, Reindexed)
    assert body_of(answer) == {
        "logs": answer.logs,
        "records": answer.records,
        "notes": answer.notes,
    }
    return answer, len(m.index.left_aside)


def test_a_log_nothing_was_read_of_is_not_counted_and_what_was_left_aside_is_said(home, caplog):
    for s in ("alpha", "beta"):
        log(home, s, "".join(RECORD % f"{s} says {w}" for w in ("one", "two", "three")))
    home.home.session_log("gamma").parent.mkdir(mode=0o700)
    os.mkfifo(home.home.session_log("gamma"), 0o600)
    log(home, "delta", "garbage\n" + RECORD % "delta says hi")
    with caplog.at_level(logging.INFO, logger="memoryd"):
        answer, aside = reindexed(home)
    assert (answer.logs, answer.records, aside) == (2, 6, 2), answer
    line = (
        "reindexed: 2 logs, 6 records, 0 notes; 2 session logs left aside, wholly or from a "
        "damaged record (bxctl memory stats names them and why)"
    )
    assert reindexed_line(answer, aside) == line
    assert line in [r.getMessage() for r in caplog.records]


def test_a_log_damaged_past_its_first_record_is_counted_read_and_said_left_aside(home):
    log(home, "alpha", RECORD % "alpha says one" + "garbage\n")
    answer, aside = reindexed(home)
    assert (answer.logs, answer.records, aside) == (1, 1, 1), answer
    assert reindexed_line(answer, aside).endswith(
        "1 session log left aside, wholly or from a damaged record "
        "(bxctl memory stats names them and why)"
    )


def test_with_nothing_left_aside_the_answer_and_body_are_the_specs(home):
    log(home, "alpha", RECORD % "alpha says one")
    answer, aside = reindexed(home)
    assert reindexed_line(answer, aside) == "reindexed: 1 log, 1 record, 0 notes"
    assert body_of(answer) == {"logs": 1, "records": 1, "notes": 0}
