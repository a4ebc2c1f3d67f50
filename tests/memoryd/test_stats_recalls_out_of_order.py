"""stats counts a recall by its own time, whatever the order of a month file's lines: the recall
log appends to the month the clock says, so after the clock went back within a month, lines
older than the window follow newer ones, and the fast path that reads a file whole must give the
same counts as reading it a line at a time."""

import datetime as dt
import json
import random

import pytest

from memoryd.home import Home
from memoryd.owner import recallcounts, stats
from tests.memoryd.test_owner_stats import recall_lines, reference


def _bytes(lines: list[dict]) -> bytes:
    return "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines).encode()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("cutoff", ["2026-11-10T00:00:00", "2026-11-25T00:00:00"])
def test_lines_in_any_order_count_as_read_a_line_at_a_time(seed, cutoff):
    lines = recall_lines(seed, n=600)
    random.Random(seed).shuffle(lines)
    newest = max(range(len(lines)), key=lambda n: lines[n]["time"])
    lines.insert(0, lines.pop(newest))  # a first line in the window, as after the clock went back
    expected_counts, expected_recalls = reference(lines, cutoff)
    counts, recalls = recallcounts.count_month(_bytes(lines), cutoff.encode())
    assert recalls == expected_recalls and +counts == +expected_counts


def test_one_line_before_the_window_after_the_first_is_not_counted():
    hit = {"kind": "moved", "session": "s-1", "record": 3, "tag": "memory"}
    lines = [
        {"time": t, "session": "s-1", "query": "q", "k": 5, "hits": [hit]}
        for t in ("2026-11-20T10:00:01Z", "2026-11-01T10:00:01Z", "2026-11-01T10:00:02Z")
    ]
    counts, recalls = recallcounts.count_month(_bytes(lines), b"2026-11-06T00:00:00")
    assert (recalls, +counts) == (1, {3: 1})


def test_stats_counts_only_the_recall_in_its_window_after_the_clock_went_back(tmp_path):
    """A recall made while the clock ran ahead (Nov 20), then three after it went back (Nov 1),
    all in 2026-11.jsonl in that order: on Dec 6, 30 days reach back to Nov 6."""
    home = Home(tmp_path / "home")
    home.memory.mkdir(parents=True)
    home.recalls.mkdir()
    times = ["2026-11-20T10:00:01Z"] + [f"2026-11-01T10:00:0{n}Z" for n in (1, 2, 2)]
    lines = [{"time": t, "session": "s-1", "query": "q", "k": 5, "hits": []} for t in times]
    (home.recalls / "2026-11.jsonl").write_bytes(_bytes(lines))
    now = dt.datetime(2026, 12, 6, 11, tzinfo=dt.UTC)
    found = stats.collect(home, 30, now)
    assert found["recalls"] == 1
    assert stats.render(found).splitlines()[0] == "recall in the last 30 days: 1 recall by sessions"
