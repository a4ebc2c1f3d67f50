"""A full disk, on a real small tmpfs: each write of each memory write fails in
turn, and the answer is the truth.

For every operation the home is rebuilt on the tmpfs, notes.md, the journal and pending.jsonl are
padded to end 10 bytes short of a page (so each append crosses into a new page and a failing one
is torn), and the disk is filled to leave 0, 1, 2 ... pages free, until the operation applies.
With P pages free, the (P+1)th write that needs a page fails. The invariant after each failure:
every file under memory/ is byte for byte what it was (a torn append cut back, a renamed file put
back, no temporary file left), the answer says "not applied", and a retry once the disk has room
applies the write exactly once. After a success, the file holds the change with its journal line.
A reindex whose build runs out of room fails, and gives back every page it took: the disk and the
index folder are as they were, and the next write is applied.
"""

import json
import shutil

import pytest

from memoryd.errors import WriteFailed
from memoryd.home import Home
from memoryd.memory import entries
from memoryd.memory.store import MemoryStore
from proto.client import RemoteError, request
from proto.messages import Reindex
from proto.records import UserRecord, append_session_record
from tests.callargs import loose_call
from tests.memoryd.store_helpers import CLEAN, SOUL_STARTER, TAINTED, Clock, args

from .small_disk import PAGE, fill_leaving, free_bytes, pad_to_cross, small_tmpfs, unfill

SECRET = {**CLEAN, "session": "mm-secret001", "taint": "secret"}
NOTE_HEAD = b"\xc2\xa7 noted 2026-09-24T20:00Z in session mm-pad00001 \xc2\xb7 private\n"


def _store(root, review=False) -> MemoryStore:
    store = MemoryStore(Home(root / "home"), soul_starter=SOUL_STARTER, review=review, now=Clock())
    store.ensure()
    return store


def _setup(root, review=False) -> MemoryStore:
    store = _store(root)
    for text in ("keep this", "leaving soon", "Robin drinks tea."):
        store.call(*loose_call(args(action="add", file="memory", text=text), **CLEAN))
    store.review_on = review
    return store


def _pending_id(store: MemoryStore) -> str:
    answer = store.call(*loose_call(args(action="add", file="user", text="staged entry"), **CLEAN))
    return answer.split("pending as ")[1].split(";")[0]


# name: (review, prepare(store) -> context, run(store, context) -> answer, writes that need a page:
# an edit of memory.md or user.md writes notes.md (when entries leave), the write's intent
# (memory/.writing.json, the new file and the journal line); a note writes its intent too
OPERATIONS = {
    "note": (
        False,
        None,
        lambda s, _: s.call(*loose_call(args(action="note", text="noted text"), **CLEAN)),
        3,
    ),
    "add": (
        False,
        None,
        lambda s, _: s.call(*loose_call(args(action="add", file="user", text="new"), **CLEAN)),
        3,
    ),
    "remove": (
        False,
        None,
        lambda s, _: s.call(
            *loose_call(args(action="remove", file="memory", old="leaving soon"), **CLEAN)
        ),
        4,
    ),
    "consolidate": (
        False,
        None,
        lambda s, _: s.call(
            *loose_call(
                args(
                    action="consolidate",
                    file="memory",
                    entries=[
                        {"old": "keep this", "keep": True},
                        {"old": "leaving soon", "move": True},
                        {"old": "Robin drinks tea.", "text": "Robin drinks green tea."},
                    ],
                ),
                **CLEAN,
            ),
        ),
        4,
    ),
    "untrusted-add": (
        False,
        None,
        lambda s, _: s.call(
            *loose_call(args(action="add", file="memory", text="from a page"), **TAINTED)
        ),
        3,
    ),
    "secret-add": (
        False,
        None,
        lambda s, _: s.call(
            *loose_call(args(action="add", file="memory", text="a secret"), **SECRET)
        ),
        3,
    ),
    "undo": (False, lambda s: s.journal.records()[-1].id, lambda s, edit: s.undo(edit), 3),
    "stage": (
        True,
        None,
        lambda s, _: s.call(*loose_call(args(action="add", file="user", text="staged"), **CLEAN)),
        1,
    ),
    "accept": (True, _pending_id, lambda s, pid: s.accept(pid), 3),
    "reject": (True, _pending_id, lambda s, pid: s.reject(pid), 1),
}


def snapshot(store: MemoryStore) -> dict[str, bytes]:
    root = store.home.memory
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _pad(store: MemoryStore) -> None:
    pad_to_cross(store.home.memory_file("notes.md"), NOTE_HEAD, b"\n", 10)
    pad_to_cross(store.home.edits / "2026-09.jsonl", b'{"pad": "', b'"}\n', 10)
    pending = store.home.memory_file("pending.jsonl")
    if pending.exists():
        pad_to_cross(pending, b'{"pad": "', b'"}\n', 10)


def _whole(store: MemoryStore) -> None:
    """notes.md and the journal end on a whole entry and every journal line parses."""
    assert store.home.memory_file("notes.md").read_bytes().endswith(b"\n")
    for line in (store.home.edits / "2026-09.jsonl").read_bytes().splitlines():
        json.loads(line)


@pytest.fixture(scope="module")
def disk():
    with small_tmpfs(64 * PAGE) as folder:
        yield folder


@pytest.mark.parametrize("name", list(OPERATIONS))
def test_each_write_of_the_sequence_fails_in_turn_and_nothing_half_done_stays(disk, name):
    review, prepare, run, writes = OPERATIONS[name]
    outcomes = []
    for pages in range(writes + 2):
        shutil.rmtree(disk / "home", ignore_errors=True)
        unfill(disk)
        store = _setup(disk, review)
        context = prepare(store) if prepare else None
        _pad(store)
        before = snapshot(store)
        journal_before = len(store.journal.records())
        items_before = len(store.review.items())
        fill_leaving(disk, pages)
        try:
            answer = run(store, context)
        except WriteFailed as e:
            outcomes.append("not applied")
            assert str(e).startswith("not applied: memoryd cannot write its memory files (")
            assert "No space left on device" in str(e)
            assert snapshot(store) == before, f"{name}: a file changed with {pages} pages free"
            _whole(store)
            unfill(disk)
            answer = run(store, context)  # the retry, with room: applied exactly once
            assert not answer.startswith("not applied")
            if name == "stage":
                assert len(store.review.items()) == items_before + 1
            else:
                assert len(store.journal.records()) == journal_before + 1
            _whole(store)
            notes_text = store.home.memory_file("notes.md").read_text()
            assert notes_text.count("noted text") <= 1 and notes_text.count("from a page") <= 1
            continue
        outcomes.append("applied")
        assert answer and not answer.startswith("not applied")
        _whole(store)
        line = store.journal.records()[-1]
        if line.to in ("memory.md", "user.md"):
            written = store.home.memory_file(line.to).read_bytes()
            assert written == entries.file_bytes(line.after)
        break
    assert outcomes == ["not applied"] * writes + ["applied"], outcomes


def test_the_answer_goes_back_over_the_socket_and_the_log_lists_only_what_applied(disk):
    """memoryd itself, its whole home on the small tmpfs: an add on a full disk is answered as not
    applied and changes nothing; once there is room the same add is applied, logged once."""
    from tests.memoryd.test_service import Running

    shutil.rmtree(disk / "home", ignore_errors=True)
    unfill(disk)
    (disk / "soul.md").write_text("You are a careful personal agent.\n")
    config = disk / "memoryd.toml"
    config.write_text(f'[paths]\nhome = "{disk / "home"}"\n')
    running = Running(disk / "home", config)
    try:
        memory_md = disk / "home" / "memory" / "memory.md"
        # The catch-up after the start writes the index in the background: let it finish before
        # the disk is filled to the page, or its writes take the page the test leaves free.
        assert running.service.caught_up.wait(10)
        fill_leaving(disk, 1)  # room for memory.md's new bytes, none for the journal's new file
        add = {"action": "add", "file": "memory", "text": "Owner likes UTC."}
        reply = running.call("memory", add, session="mm-clean0001")
        assert reply.ok is False
        assert reply.output == (
            "not applied: memoryd cannot write its memory files (No space left on device); "
            "memory.md is unchanged"
        )
        assert memory_md.read_bytes() == b""
        assert [p.name for p in memory_md.parent.iterdir() if p.name.startswith(".")] == []
        unfill(disk)
        reply = running.call("memory", add, session="mm-clean0001")
        assert reply.ok and reply.output.startswith("memory.md updated")
        log = running.admin("log", "10")
        assert log.count(" add ") == 1, log
    finally:
        running.stop()
        unfill(disk)


WORDS = "kestrel heron osprey lapwing curlew dunlin plover redshank godwit whimbrel".split()


def _talk(home, records: int) -> None:
    folder = home / "sessions" / "mm-talk0001"
    folder.mkdir(parents=True)
    for n in range(records):
        text = f"{WORDS[n % 10]} record {n} saw {WORDS[(n * 7) % 10]} number{n} at site{n % 97}"
        append_session_record(
            folder / "0.jsonl", UserRecord(time="2026-09-24T20:00:00Z", content=text)
        )


@pytest.mark.parametrize("pages", [0, 3, 40])
def test_a_reindex_that_runs_out_of_room_gives_every_page_back(pages):
    """memoryd on a small tmpfs with an index of some hundred pages; the disk filled to leave
    fewer than the new index needs. The reindex fails, nothing it wrote stays (the free space and
    the index folder are what they were), the old index answers, and the next note is written."""
    from tests.memoryd.test_service import Running

    with small_tmpfs(1024 * PAGE) as disk:
        (disk / "soul.md").write_text("You are a careful personal agent.\n")
        config = disk / "memoryd.toml"
        config.write_text(f'[paths]\nhome = "{disk / "home"}"\n')
        _talk(disk / "home", 3000)
        running = Running(disk / "home", config)
        try:
            assert running.service.caught_up.wait(30)
            index_dir = disk / "home" / "index"
            index_size = sum(p.stat().st_size for p in index_dir.iterdir())  # with its WAL
            assert index_size > (pages + 20) * PAGE  # the new index cannot fit in what is left
            fill_leaving(disk, pages + 8)  # room for a note, none for a new index
            free = free_bytes(disk)
            names = sorted(p.name for p in index_dir.iterdir())
            with pytest.raises(RemoteError) as failed:
                request(running.cfg.admin_socket, Reindex(), timeout=60)
            assert "the reindex failed and the index is as it was" in str(failed.value)
            assert sorted(p.name for p in index_dir.iterdir()) == names
            assert free_bytes(disk) == free
            found = running.call("recall", {"query": "osprey"})
            assert found.output.startswith("[1] "), found.output
            note = running.call("memory", {"action": "note", "text": "the godwit came back"})
            assert note.ok, note.output
            unfill(disk)
            reply = request(running.cfg.admin_socket, Reindex(), timeout=60)
            assert reply.records == 3000
        finally:
            running.stop()
            unfill(disk)
