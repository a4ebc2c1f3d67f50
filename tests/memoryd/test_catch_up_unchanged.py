"""The catch-up after a start costs what is new: the logs the index has read to their end, as they
are now, are counted as read at once, without a writer job each; only the logs that grew, were
replaced or shrunk, are new, or hold a damaged record go to the writer, where every guarantee
stands as before: the tail hash, the label memoryd had seen, the forgotten text left out, and the
log left aside at its damaged record."""

import asyncio
import json
import logging
import os
import shutil
import sqlite3

import pytest

from memoryd.index import unchanged
from memoryd.journal.forgetlines import digest
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.test_index_label_kept import AFTER, BEFORE, fetched, labels, said, user
from tests.memoryd.test_reindex import append

QUIET = [f"s-quiet-{n:03d}" for n in range(60)]
FORGOTTEN = "The locker code is 4417."


def _rewritten_without_results(path) -> None:
    keep = [x for x in path.read_text().splitlines(True) if json.loads(x)["type"] != "tool_result"]
    path.with_name("0.jsonl.new").write_text("".join(keep))
    os.replace(path.with_name("0.jsonl.new"), path)


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    for n, session in enumerate(QUIET):
        append(m.home, session, [user(f"quiet session {n} about the harbour")])
    append(m.home, "s-grown", [user("The boat is at pier nine.")])
    append(m.home, "s-forgot", [user("The van is in the lot.")])
    append(m.home, "s-swapped", [user(BEFORE), *fetched(), said(AFTER)])
    append(m.home, "s-shrunk", [user("The shed key is blue."), user("The gate key is red.")])
    append(m.home, "s-oldrow", [user("The ladder is in the barn.")])
    append(m.home, "s-copied", [user("The spade is in the loft.")])
    append(m.home, "s-damaged", [user("The boiler was serviced in May.")])
    with open(m.home.session_log("s-damaged"), "ab") as f:
        f.write(b'{"type": "user", "content": 12}\n')  # not a record: the reading stops here
    m.index.catch_up_all()
    yield m
    m.close()
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_only_what_changed_goes_to_the_writer_and_every_guarantee_stands(md, caplog):
    home = md.home
    append(home, "s-grown", [user("The dinghy is at pier ten.")])
    # A record holding a text the owner made memoryd forget is never indexed.
    line = {"digest": digest(FORGOTTEN), "time": "2026-12-01T00:00Z"}
    (home.memory / "forgotten.jsonl").write_text(json.dumps(line) + "\n")
    append(home, "s-forgot", [user(FORGOTTEN)])
    # Another file in its place, without the untrusted tool result: the label it had stands.
    _rewritten_without_results(home.session_log("s-swapped"))
    # The same file, shorter: the tail hash sees it.
    path = home.session_log("s-shrunk")
    first = path.read_bytes().splitlines(True)[0]
    with open(path, "r+b") as f:
        f.write(first.replace(b"shed key is blue", b"shed key is gold"))
        f.truncate()
    append(home, "s-new", [user("The kayak is in the garage.")])
    # Another file of the very same size (an editor's save): its inode tells it.
    path = home.session_log("s-copied")
    path.with_name("0.jsonl.new").write_bytes(path.read_bytes().replace(b"loft", b"shed"))
    os.replace(path.with_name("0.jsonl.new"), path)
    # An index written before the file read was kept: its log goes to the writer.
    with sqlite3.connect(home.index_db) as conn:
        conn.execute(
            "UPDATE offsets SET tail = substr(tail, 1, 64) WHERE log = ?",
            ("sessions/s-oldrow/0.jsonl",),
        )
    conn.close()
    shutil.rmtree(home.sessions / QUIET[0])  # removed: dropped, as before

    real, seen = md.index.catch_up_session_part, []

    def part(session: str):
        seen.append((session, md.index.catching_up))
        return real(session)

    md.index.catch_up_session_part = part
    with caplog.at_level(logging.INFO, logger="memoryd"):
        asyncio.run(asyncio.wait_for(md.service.catch_up(), 30))

    changed = [
        "s-copied",
        "s-damaged",
        "s-forgot",
        "s-grown",
        "s-new",
        "s-oldrow",
        "s-shrunk",
        "s-swapped",
    ]
    assert sorted({session for session, _ in seen}) == changed
    total = len(QUIET) - 1 + len(changed)
    # The unchanged logs were counted as read before the first writer job.
    assert seen[0][1] == (total - len(changed), total)
    assert md.index.catching_up is None and md.service.caught_up.is_set()

    assert "pier ten" in md.recall("dinghy pier")
    assert "code is 4417" not in md.recall("locker code 4417")
    assert "shed key is gold" in md.recall("shed key")
    assert "shed key is blue" not in md.recall("shed key")
    assert "kayak" in md.recall("kayak garage")
    assert "spade is in the shed" in md.recall("spade")
    assert "harbour" in md.recall("quiet session 59 harbour")
    assert "quiet session 0 about" not in md.recall("quiet session harbour", k=100)
    assert labels(home, "s-swapped", AFTER) == {("private", 1)}
    assert "damaged at record 1" in md.index.left_aside.get("s-damaged", "")
    assert "s-oldrow" in unchanged.unchanged(md.index, ["s-oldrow"])  # its file is kept again
    assert any("is another file than was read" in r.getMessage() for r in caplog.records)


def test_a_start_with_nothing_new_hands_the_writer_no_log(md):
    real, seen = md.index.catch_up_session_part, []
    md.index.catch_up_session_part = lambda session: seen.append(session) or real(session)
    asyncio.run(asyncio.wait_for(md.service.catch_up(), 30))
    assert seen == ["s-damaged"]  # read up to its damaged record, never past it
    assert md.index.catching_up is None and md.service.caught_up.is_set()
    assert "s-damaged" in md.index.left_aside
    assert "harbour" in md.recall("quiet session 7 harbour")


def test_a_log_turned_into_a_link_or_a_fifo_is_not_counted_as_read(md):
    path = md.home.session_log(QUIET[1])
    os.replace(path, path.with_name("kept.jsonl"))
    path.symlink_to(path.with_name("kept.jsonl"))
    fifo = md.home.session_log(QUIET[2])
    fifo.unlink()
    os.mkfifo(fifo, 0o600)
    found = unchanged.unchanged(md.index, QUIET[:4])
    assert found == {QUIET[0], QUIET[3]}
