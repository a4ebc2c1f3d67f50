"""backup --with-sessions: the session logs are not held open (a home may have more of them than
the descriptor limit), so the backup is written whatever their number; each is archived as it was
when noted, and one replaced, cut short or not a file by then refuses the backup in one line,
leaving no archive."""

import os
import resource
import tarfile

import pytest

from memoryd.data import snapshot
from memoryd.errors import AdminRefused
from proto.records import UserRecord, append_session_record
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

    def note_then_append(snap, home):
        real(snap, home)
        append_session_record(log, UserRecord(time=T, content="said after the backup began"))
        with open(log, "ab") as f:
            f.write(b'{"type": "user", "half a rec')

    real = snapshot.add_sessions
    monkeypatch.setattr(snapshot, "add_sessions", note_then_append)
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
    def note_then_change(snap, home):
        real(snap, home)
        change(many.home.session_log("mm-0007"))

    real = snapshot.add_sessions
    monkeypatch.setattr(snapshot, "add_sessions", note_then_change)
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
        lambda home: [*listed, ("sessions/mm-fifo/0.jsonl", planted)],
    )
    with pytest.raises(AdminRefused, match=r"^refused: the backup cannot read a session log \("):
        many.admin("backup", {"with_sessions": True})
    assert not (many.home.root / "backups").exists() or not any(
        (many.home.root / "backups").iterdir()
    )
