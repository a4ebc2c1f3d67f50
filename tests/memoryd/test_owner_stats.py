"""stats' hit counts: the fast paths agree with parsing every line as JSON."""

import datetime as dt
import json
import os
import random
from collections import Counter

import pytest

from memoryd.home import Home
from memoryd.memory import notes
from memoryd.owner import notehits, recallcounts, stats
from memoryd.owner.notehits import NoteIds


def recall_lines(seed: int, n: int = 1_500) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        hits = [
            {
                "kind": rng.choice(["moved", "noted", "dropped", "session"]),
                "session": "s-1",
                "record": rng.randrange(40),
                "tag": "memory",
            }
            for _ in range(rng.randrange(6))
        ]
        line = {
            "time": f"2026-11-{1 + i * 29 // n:02d}T10:00:00Z",
            "session": "s-1",
            # A query cannot forge the owner's mark or a hit: JSON escapes its quotes.
            "query": rng.choice(['x","by":"owner"}', '"kind":"moved","record":7', "tea"]),
            "k": 5,
            "hits": hits,
        }
        if rng.random() < 0.1:
            line["by"] = "owner"
        # Written after the owner's mark: a partial recall, a recall mode other than spec.
        if rng.random() < 0.2:
            line["partial"] = True
        if rng.random() < 0.2:
            line["mode"] = "context"
        out.append(line)
    return out


def reference(lines: list[dict], cutoff: str) -> tuple[Counter, int]:
    counts: Counter = Counter()
    recalls = 0
    for line in lines:
        if line.get("by") == "owner" or line["time"][:19] < cutoff:
            continue
        recalls += 1
        for hit in line["hits"]:
            if hit["kind"] != "session":
                counts[hit["record"]] += 1
    return counts, recalls


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("cutoff", ["2026-10-01T00:00:00", "2026-11-15T00:00:00"])
def test_counts_match_parsing_every_line(seed, cutoff):
    lines = recall_lines(seed)
    data = "".join(
        json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines
    ).encode()
    expected_counts, expected_recalls = reference(lines, cutoff)
    for variant in (data, b"\n" + data, data.replace(b',"k":5', b', "k": 5', 3)):
        counts, recalls = recallcounts.count_month(variant, cutoff.encode())
        assert recalls == expected_recalls
        assert +counts == +expected_counts


def test_many_damaged_lines_are_said_in_one_log_line_per_file(tmp_path, caplog):
    """A hand edit that spoils every line of a month file costs one log line per stats, not one
    per line: the log stays readable, and bounded."""
    path = tmp_path / "2026-09.jsonl"
    data = b"\n".join(b'{"not": "a recall line %d"}' % n for n in range(5_000)) + b"\n"
    with caplog.at_level("WARNING"):
        counts, recalls = recallcounts.count_month(data, b"2026-09-01T00:00:00", path)
    assert (counts, recalls) == (Counter(), 0)
    [said] = [r.getMessage() for r in caplog.records]
    assert said.startswith(f"{path}: line 1 is not a RecallLine") and "and 4,999 lines more" in said


def _fifo(path):
    os.mkfifo(path, 0o600)


def _link(path):
    (path.parent / "elsewhere").write_text("{}\n")
    path.symlink_to(path.parent / "elsewhere")


@pytest.mark.parametrize(
    "make, what",
    [
        (_fifo, "is a FIFO, not a regular file"),
        (_link, "is a symbolic link, which is not followed"),
        (lambda p: p.mkdir(), "is not a file"),
    ],
)
@pytest.mark.parametrize("name", ["recalls", "notes"])
def test_a_file_stats_reads_that_is_no_regular_file_is_named_never_waited_on(
    tmp_path, make, what, name
):
    """stats reads the month files of the window and notes.md: a FIFO there is never waited on
    (a stats would hold a reader for good), a link never followed; the answer says which file
    was not read and why, and the rest is counted."""
    home = Home(tmp_path / "home")
    home.memory.mkdir(parents=True)
    home.recalls.mkdir()
    now = dt.datetime(2026, 9, 24, 12, tzinfo=dt.UTC)
    if name == "recalls":
        target, said = home.recalls / "2026-09.jsonl", "memory/recalls/2026-09.jsonl: "
        (home.recalls / "2026-08.jsonl").write_text(json.dumps(_line("2026-08-30T10:00:00Z")))
    else:
        target, said = home.memory_file("notes.md"), "memory/notes.md: "
    make(target)
    shown = stats.render(stats.collect(home, 30, now))
    [line] = [line for line in shown.splitlines() if line.startswith(said)]
    assert what in line and "\n" not in line
    if name == "recalls":
        assert "1 recall by sessions" in shown  # the month beside it was counted


def _line(time: str) -> dict:
    return {"time": time, "session": "s-1", "query": "q", "k": 5, "hits": []}


@pytest.mark.parametrize("seed", range(3))
def test_a_month_file_read_a_block_at_a_time_counts_as_read_whole(
    tmp_path, monkeypatch, caplog, seed
):
    """stats reads a month file in blocks of whole lines (its memory stays about a block, however
    large the file): the counts are those of the whole file, and a line longer than any memoryd
    writes is skipped unread and said once."""
    monkeypatch.setattr(recallcounts, "BLOCK", 997)
    monkeypatch.setattr(recallcounts, "LONGEST_LINE", 5_000)
    lines = recall_lines(seed, n=400)
    cutoff = "2026-10-01T00:00:00"
    data = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines).encode()
    huge = b'{"time":"2026-11-01T00:00:00Z",' + b"x" * 20_000 + b"\n"
    at = data.index(b"\n", len(data) // 2) + 1
    path = tmp_path / "2026-11.jsonl"
    path.write_bytes(data[:at] + huge + data[at:])
    with open(path, "rb") as f, caplog.at_level("WARNING"):
        counts, recalls = recallcounts._count_file(f, cutoff.encode(), path)
    expected_counts, expected_recalls = reference(lines, cutoff)
    assert recalls == expected_recalls and +counts == +expected_counts
    [said] = [r.getMessage() for r in caplog.records]
    assert "is longer than 5,000 bytes" in said


@pytest.mark.parametrize("damaged_first", [False, True], ids=["memoryd's form", "parsed"])
def test_stats_counts_only_the_notes_there_are(tmp_path, damaged_first):
    """A recall log naming a hundred thousand note numbers (edited, or carried in by a restore)
    costs stats no more than the notes there are: only their numbers are counted."""
    home = Home(tmp_path / "home")
    home.recalls.mkdir(parents=True)
    lines = [
        {
            "time": "2026-11-02T10:00:00Z",
            "session": "s-1",
            "query": "tea",
            "k": 5,
            "hits": [{"kind": "noted", "session": "s-1", "record": n, "tag": "memory"}],
        }
        for n in range(100_000)
    ]
    data = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)
    if damaged_first:  # a first line not in memoryd's form: every line is parsed
        data = '{"damaged": true}\n' + data
    (home.recalls / "2026-11.jsonl").write_text(data)
    since, until = dt.datetime(2026, 11, 1, tzinfo=dt.UTC), dt.datetime(2026, 11, 30, tzinfo=dt.UTC)
    there = [
        notes.NoteEntry(n, "noted", "2026-11-01T10:00Z", "s-1", None, "private", False, "t", 0, 0)
        for n in (3, 70_000)
    ]
    unread: list[str] = []
    counts, recalls = recallcounts.note_hits(home, since, until, unread, NoteIds(there))
    assert recalls == 100_000
    assert counts == Counter({3: 1, 70_000: 1})
    assert unread[-1] == notehits.unattributed_said(99_998)  # after the damaged line, if any
    everything, _ = recallcounts.note_hits(home, since, until)
    assert len(everything) == 100_000  # without the notes, by the numbers the lines hold


def test_stats_sizes_the_session_logs_from_its_one_look_at_them(tmp_path, monkeypatch):
    """sessions/'s size is the sum of the logs' sizes that the unread list looked at anyway: a
    home that kept tens of thousands of sessions is not walked a second time on every stats."""
    from tests.memoryd.owner_data_harness import Memoryd

    md = Memoryd(tmp_path / "home")
    try:
        md.say("s-one", "alpha words said", "alpha reply")
        md.say("s-two", "bravo words said at more length", "bravo reply")
        walked = []
        real = stats._tree_size
        monkeypatch.setattr(stats, "_tree_size", lambda p: walked.append(p) or real(p))
        found = json.loads(md.admin("stats", '{"json": true}'))
        logs = [md.index.home.session_log(s) for s in ("s-one", "s-two")]
        assert found["sizes"]["sessions/"] == sum(os.stat(p).st_size for p in logs) > 0
        assert md.index.home.sessions not in walked
        assert md.index.home.edits in walked  # the other folders are still walked
    finally:
        md.close()
