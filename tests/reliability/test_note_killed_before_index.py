"""memoryd killed after a note is appended and journalled, before the index took it: the next start
reads only the new note, from where the index stopped. notes.md changed only by memoryd's append,
so nothing is said of a change outside memoryd and no note row of the earlier reading is deleted
(in hybrid mode, their vectors would go with them)."""

import re
import sqlite3

from tests.reliability import crash_harness as H

MANY = 400  # notes already in notes.md and in the index


def _note_rowids(index: str) -> list[int]:
    conn = sqlite3.connect(index)
    try:
        found = conn.execute(
            "SELECT rowid FROM sources WHERE kind IN ('noted', 'moved', 'dropped') ORDER BY rowid"
        )
        return [rowid for (rowid,) in found]
    finally:
        conn.close()


def test_a_restart_after_a_note_killed_before_its_index_reads_only_that_note(tmp_path):
    (tmp_path / "tpl").mkdir(mode=0o700)
    template = H.build_template(tmp_path / "tpl", False)
    with open(template / "memory/notes.md", "a", encoding="utf-8") as f:
        for i in range(MANY):
            f.write(
                f"§ noted 2026-11-{1 + i % 28:02d}T10:00Z in session mm-old{i % 90:04d} · private\n"
                f"an ordinary note number {i} about the garden and the weekly shopping list\n"
            )
    note = {o.name: o for o in H.operations()}["note"]
    reference = H.run_once(template, tmp_path / "ref", note, 0)
    points = [line.split()[1:] for line in reference.trace]
    journalled = max(
        i
        for i, (kind, name) in enumerate(points)
        if kind == "fsync" and re.fullmatch(r"\d{4}-\d{2}\.jsonl", name)
    )
    # the first step of the index's catch-up after the note's journal line is on disk
    at = next(
        i for i in range(journalled + 1, len(points)) if points[i][0] in ("executemany", "commit")
    )
    run = tmp_path / "run"
    killed = H.run_once(template, run, note, at + 1)
    assert killed.killed
    index = str(run / "home/index/memory.sqlite3")
    rows_before = _note_rowids(index)
    log = run / "memoryd.log"
    size = log.stat().st_size

    restarted = H.Memoryd(run)
    assert restarted.start(crashing=False)
    restarted.stop()

    said = log.read_bytes()[size:].decode()
    assert "indexing it again" not in said
    found = re.findall(r"caught up, ([\d,]+) new record", said)  # "1 new record or note"
    caught = [int(n.replace(",", "")) for n in found]
    assert caught and max(caught) <= 1
    rows_after = _note_rowids(index)
    assert rows_after[: len(rows_before)] == rows_before and len(rows_after) == len(rows_before) + 1
    assert H.index_rows(run / "home/index/memory.sqlite3") == H.fresh_index(run / "home", run)
