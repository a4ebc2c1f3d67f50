"""A recall log line torn by a power cut (its first bytes on disk; memoryd ends it with a newline
at its next start) is no recall: stats counts neither it nor any hit it got as far as, and its
answer says how many damaged lines it left out, once per month file."""

import datetime as dt
import json

import pytest

from memoryd.owner import recallcounts
from proto.records import utc_text
from tests.memoryd.test_stats_note_hits_renumbered import _home

CUTOFF = b"2026-11-01T00:00:00"


def _line(time: str, record: int) -> bytes:
    hit = {"kind": "moved", "session": "mm-y73sxj3p", "record": record, "tag": "identity"}
    line = {"time": time, "session": "mm-a", "query": "bread", "k": 5, "hits": [hit]}
    return json.dumps(line, separators=(",", ":")).encode()


@pytest.mark.parametrize("at", [0, 1, 3])
@pytest.mark.parametrize("cut", [20, 60, 90, 130])
def test_a_torn_line_is_not_counted_wherever_it_is(at, cut):
    lines = [_line(f"2026-11-0{n + 1}T10:00:00Z", n) for n in range(3)]
    torn = _line("2026-11-05T10:00:00Z", 7)[:cut]
    assert not torn.endswith(b"}]}")
    data = b"\n".join(lines[:at] + [torn] + lines[at:]) + b"\n"
    counts, recalls = recallcounts.count_month(data, CUTOFF)
    assert recalls == 3 and +counts == {0: 1, 1: 1, 2: 1}


def test_stats_counts_one_recall_and_says_the_torn_line(tmp_path):
    md = _home(tmp_path)
    try:
        assert "Banana bread" in md.recall("banana")
        now = dt.datetime.now(dt.UTC)
        month = md.index.home.recalls_month(now)
        with open(month, "ab") as f:  # torn lines, each ended by the next start
            for cut in (40, 130, 145, 147):
                f.write(_line(utc_text(now), 1)[:cut] + b"\n")
        found = json.loads(md.admin("stats", '{"json": true}'))
        assert found["recalls"] == 1
        assert {m["entry"]: m["hits"] for m in found["moved"]}["Banana bread recipe."] == 1
        said = f"memory/recalls/{month.name}: 4 damaged lines not counted (line 2 is not a JSON"
        assert [line for line in found["unread"] if line.startswith(said)] == found["unread"]
        assert len(found["unread"]) == 1
        shown = md.admin("stats", "{}").splitlines()
        assert shown[0] == "recall in the last 30 days: 1 recall by sessions"
    finally:
        md.close()


def test_stats_reads_one_day_and_one_recall_in_the_singular(tmp_path):
    md = _home(tmp_path)
    try:
        md.recall("banana")
        shown = md.admin("stats", '{"days": 1}').splitlines()
        assert shown[0] == "recall in the last 1 day: 1 recall by sessions"
    finally:
        md.close()
