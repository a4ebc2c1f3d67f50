"""backup --with-sessions: the session logs are not held open (a home may have more of them than
the descriptor limit), so the backup is written whatever their number; each is archived as it was
when noted, and one replaced, cut short or not a file by then refuses the backup in one line,
leaving no archive. The logs are noted before the memory is held, never after, so that no log in
an archive holds the result of a write its memory and journal lack."""

import os
import resource
import tarfile

import pytest

from memoryd.data import snapshot
from memoryd.errors import AdminRefused
from proto.records import ToolResultRecord, UserRecord, append_session_record
from tests.memoryd.owner_data_harness import Memoryd, T

SESSIONS = 300


def write_logs(root, n: int) -> None:
    for i in range(n):
        log = root / "sessions" / f"mm-{i:04d}" / "0.jsonl"
        log.parent.mkdir(parents=True, mode=0o700)
        append_session_record(log, UserRecord(time=T, content=f"said in session {i}"))


@pytest.fixture
def many(tmp_path):
    root = tmp_path / "home"
    write_logs(root, SESSIONS)
    m = Memoryd(root)
    yield m
    m.close()


@pytest.fixture
def few_descriptors():
    """RLIMIT_NOFILE's soft limit set to what is open now and 64 more, for the test's length."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 64, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def archived(path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {
            m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.name.startswith("sess")
        }


def test_a_backup_with_more_session_logs_than_descriptors_is_written(many, few_descriptors):
    made = many.data("backup", with_sessions=True)
    logs = archived(made["path"])
    assert len(logs) == SESSIONS
    for name, data in logs.items():
        assert data == (many.home.root / name).read_bytes()


def test_a_session_log_is_archived_as_it_was_when_noted(many, monkeypatch):
    log = many.home.session_log("mm-0007")
    noted = log.read_bytes()

    def note_then_append(home, *rest):
        noted = real(home, *rest)
        append_session_record(log, UserRecord(time=T, content="said after the backup began"))
        with open(log, "ab") as f:
            f.write(b'{"type": "user", "half a rec')
        return noted

    real = snapshot.note_sessions
    monkeypatch.setattr(snapshot, "note_sessions", note_then_append)
    made = many.data("backup", with_sessions=True)
    assert archived(made["path"])["sessions/mm-0007/0.jsonl"] == noted


def replace(log) -> None:
    """As a rewrite of the log would: the same bytes, renamed over it."""
    other = log.with_name("0.jsonl.tmp")
    other.write_bytes(log.read_bytes())
    os.replace(other, log)


def cut(log) -> None:
    os.truncate(log, 3)


def fifo(log) -> None:
    os.unlink(log)
    os.mkfifo(log)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (replace, "sessions/mm-0007/0.jsonl was replaced while the backup was written"),
        (cut, "sessions/mm-0007/0.jsonl became shorter while the backup was written"),
        (fifo, "sessions/mm-0007/0.jsonl cannot be read again: "),
        (os.unlink, "sessions/mm-0007/0.jsonl cannot be read again: No such file"),
    ],
)
def test_a_session_log_changed_before_it_is_archived_refuses_the_backup(
    many, monkeypatch, change, said
):
    def note_then_change(home, *rest):
        noted = real(home, *rest)
        change(many.home.session_log("mm-0007"))
        return noted

    real = snapshot.note_sessions
    monkeypatch.setattr(snapshot, "note_sessions", note_then_change)
    with pytest.raises(AdminRefused) as refused:
        many.admin("backup", {"with_sessions": True})
    assert said in str(refused.value) and "no archive was left" in str(refused.value)
    assert "\n" not in str(refused.value)
    assert list((many.home.root / "backups").iterdir()) == []


def test_a_session_log_that_cannot_be_noted_refuses_the_backup_in_one_line(many, monkeypatch):
    planted = many.home.sessions / "mm-fifo" / "0.jsonl"
    planted.parent.mkdir(mode=0o700)
    os.mkfifo(planted)
    listed = snapshot.layout.session_files(many.home)
    monkeypatch.setattr(  # as if the log became a FIFO after the sessions were listed
        snapshot.layout,
        "session_files",
        lambda home, *rest: [*listed, ("sessions/mm-fifo/0.jsonl", planted)],
    )
    with pytest.raises(AdminRefused, match=r"^refused: the backup cannot read a session log \("):
        many.admin("backup", {"with_sessions": True})
    assert not (many.home.root / "backups").exists() or not any(
        (many.home.root / "backups").iterdir()
    )


def test_a_backup_with_sessions_holds_no_log_line_later_than_its_memory(many, monkeypatch):
    """A memory write applied after the memory was held, and its result logged by loopd then,
    must not be in the archive's log: the archive's memory and journal lack that write."""
    many.say("zzz", "please remember things")
    log = many.home.session_log("zzz")
    service = many.service
    real = service._writer.submit
    late = []

    def submit(priority, fn, *args, **kw):
        future = real(priority, fn, *args, **kw)
        if getattr(fn, "__name__", "") == "take" and not late:
            future.result()  # the memory is held; a session writes and logs its result now
            late.append(many.call({"action": "add", "file": "memory", "text": "Late entry."}))
            said = {"time": T, "call_id": "call-late", "name": "memory", "output": late[0]}
            result = ToolResultRecord.model_validate(
                {**said, "class": "private", "untrusted": False}
            )
            append_session_record(log, result)
        return future

    monkeypatch.setattr(service._writer, "submit", submit)
    made = many.data("backup", with_sessions=True)
    assert late and "Late entry." in many.home.memory_file("memory.md").read_text()
    with tarfile.open(made["path"], "r:gz") as tar:
        archived_log = tar.extractfile("sessions/zzz/0.jsonl").read()
        archived_memory = tar.extractfile("memory/memory.md").read()
    assert b"Late entry." not in archived_memory
    assert b"call-late" not in archived_log
