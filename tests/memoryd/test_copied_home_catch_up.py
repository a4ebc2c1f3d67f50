"""A home copied or moved with cp -a (sessions/ copied back after a restore, a move to a new disk)
gives every log and notes.md a new inode and not a byte more: memoryd reads on from where the
index stopped, said once for the home, rather than reading every log again from its start
(minutes at a million records, every memory write waiting meanwhile). A log that really is
another file in the copy (other bytes of the same size far before the offset, shorter, an index
that kept no digest of it) is still read again. memoryd runs as a process on the copy."""

import random
import shutil
import sqlite3
import subprocess

from memoryd.home import Home
from tests.memoryd.test_index_label_kept import user
from tests.memoryd.test_reindex import append, append_note
from tests.memoryd_process import MemorydProcess

AGAIN = "is another file than was read"
MOVED = "copied or moved (cp -a)"


def _text(home, session: str) -> list[str]:
    conn = sqlite3.connect(home / "index" / "memory.sqlite3")
    try:
        return [
            t
            for (t,) in conn.execute(
                "SELECT h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
                " WHERE s.session = ? ORDER BY s.rowid",
                (session,),
            )
        ]
    finally:
        conn.close()


def test_a_copied_home_is_read_on_and_a_log_that_is_another_file_is_read_again(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = MemorydProcess(tmp_path / "a")
    home = Home(first.home)
    # A log of several whole digest blocks (64 KiB each) and some more, and small ones.
    append(
        home, "s-long", [user(f"record {n} of the long log about the harbour") for n in range(3000)]
    )
    for n in range(5):
        append(home, f"s-small-{n}", [user(f"The spade number {n} is in the loft.")])
    append(
        home, "s-edited", [user("The boat is at pier nine.")] + [user("filler") for _ in range(40)]
    )
    append(home, "s-shorter", [user("The shed key is blue."), user("The gate key is red.")])
    append(home, "s-olddigest", [user("The ladder is in the barn.")])
    rng = random.Random(7)
    for n in range(30):
        append_note(home, n, rng)
    second = MemorydProcess(tmp_path / "b")
    try:
        first.start()
        first.stop()
        subprocess.run(["cp", "-a", str(first.home), str(second.home)], check=True)
        copy = Home(second.home)
        # In the copy, three logs really are other files than were read.
        path = copy.session_log("s-edited")  # as many bytes, one changed far before the end
        path.write_bytes(path.read_bytes().replace(b"pier nine", b"pier five", 1))
        path = copy.session_log("s-shorter")
        path.write_bytes(path.read_bytes().splitlines(True)[0])
        conn = sqlite3.connect(copy.index_db)  # progress kept before the digest was
        with conn:
            conn.execute(
                "UPDATE offsets SET tail = substr(tail, 1, instr(substr(tail, 66), ' ') + 64)"
                " WHERE log = 'sessions/s-olddigest/0.jsonl'"
            )
        conn.close()
        second.start()
        second.stop()
        said = second.log.read_text()
        again = " ".join(line for line in said.splitlines() if AGAIN in line)
        for session in ("s-long", *(f"s-small-{n}" for n in range(5))):
            assert f"/{session}/" not in again  # read on: the same bytes
        assert "notes.md changed" not in said
        for session in ("s-edited", "s-shorter", "s-olddigest"):
            assert f"/{session}/" in again  # another file, or no digest to tell
        assert said.count(MOVED) == 1
        assert _text(copy.root, "s-edited")[0] == "The boat is at pier five."
        assert _text(copy.root, "s-shorter") == ["The shed key is blue."]
        assert len(_text(copy.root, "s-long")) == 3000
        # Read on: what is appended to a moved log is indexed, once.
        append(copy, "s-small-0", [user("The rake is by the door.")])
        second.start()
        second.stop()
        assert _text(copy.root, "s-small-0") == [
            "The spade number 0 is in the loft.",
            "The rake is by the door.",
        ]
    finally:
        first.kill()
        second.kill()
        shutil.rmtree(tmp_path / "a", ignore_errors=True)
        shutil.rmtree(tmp_path / "b", ignore_errors=True)


def test_an_index_kept_without_digests_takes_them_at_a_start_and_a_copy_is_then_read_on(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = MemorydProcess(tmp_path / "a")
    home = Home(first.home)
    for n in range(4):
        append(home, f"s-{n}", [user(f"The spade number {n} is in the loft.") for _ in range(50)])
    second = MemorydProcess(tmp_path / "b")
    try:
        first.start()
        first.stop()
        conn = sqlite3.connect(home.index_db)  # as an older memoryd kept them: hash, file
        with conn:
            conn.execute(
                "UPDATE offsets SET tail = substr(tail, 1, instr(substr(tail, 66), ' ') + 64)"
                " WHERE log LIKE 'sessions/%'"
            )
        conn.close()
        first.start()  # nothing new: each log's digest is taken once
        first.stop()
        subprocess.run(["cp", "-a", str(first.home), str(second.home)], check=True)
        second.start()
        second.stop()
        said = second.log.read_text()
        assert AGAIN not in said
        assert said.count(MOVED) == 1
    finally:
        first.kill()
        second.kill()
        shutil.rmtree(tmp_path / "a", ignore_errors=True)
        shutil.rmtree(tmp_path / "b", ignore_errors=True)
