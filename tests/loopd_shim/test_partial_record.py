"""A record half written when the process dies does not damage the log.

append_session_record writes a line in one write, but a process can still die part way (a crash,
a full disk, a kill between two writes of a large line). The reader treats such a last line as not
yet a record; the next append cuts it away first, so it never glues onto the next record.
"""

import logging
import signal
import subprocess
import sys

import pytest

from loopd_shim.sessions import SessionStore, cut_partial_tail
from proto.messages import AssistantMessage, OwnerMessage, SessionStart
from proto.records import UserRecord, append_session_record, read_records, record_json

WHOLE = b'{"type":"user","time":"2026-09-20T14:02:11Z","content":"one"}\n'


@pytest.mark.parametrize(
    "before, after",
    [
        (b"", b""),
        (WHOLE, WHOLE),
        (WHOLE + b'{"type":"us', WHOLE),
        (b'{"type":"us', b""),
        (WHOLE + WHOLE[:-1], WHOLE),
        (WHOLE + b"x" * 200_000, WHOLE),
        (b"\n", b"\n"),
    ],
)
def test_cut_partial_tail(tmp_path, before, after):
    path = tmp_path / "0.jsonl"
    path.write_bytes(before)
    assert cut_partial_tail(path) == len(before) - len(after)
    assert path.read_bytes() == after


def test_cut_partial_tail_of_a_missing_log(tmp_path):
    assert cut_partial_tail(tmp_path / "absent.jsonl") == 0


# The child appends the first half of a record line, fsyncs it, and is killed before the rest.
_CHILD = """
import os, signal, sys
line = sys.argv[2].encode()
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
os.write(fd, line[: len(line) // 2])
os.fsync(fd)
os.kill(os.getpid(), signal.SIGKILL)
os.write(fd, line[len(line) // 2 :])
"""


def kill_mid_append(log, record):
    line = record_json(record) + "\n"
    child = subprocess.run([sys.executable, "-c", _CHILD, str(log), line], check=False)
    assert child.returncode == -signal.SIGKILL
    return line


def test_a_process_killed_mid_append_leaves_the_log_usable(stack, caplog):
    stack.ask(SessionStart(session="s-kill"))
    log = stack.config.sessions / "s-kill" / "0.jsonl"
    stack.ask(OwnerMessage(session="s-kill", content="first"))
    whole = log.read_bytes()

    lost = UserRecord(time="2026-09-20T14:02:11Z", content="lost in the crash " * 20)
    line = kill_mid_append(log, lost)
    assert log.read_bytes() == whole + line.encode()[: len(line.encode()) // 2]
    assert [r.record.content for r in read_records(log)] == ["first"]

    with caplog.at_level(logging.WARNING, logger="loopd_shim"):
        stack.ask(OwnerMessage(session="s-kill", content="second"))
        stack.ask(AssistantMessage(session="s-kill", content="third"))

    records = [r.record for r in read_records(log)]
    assert [(r.type, r.content) for r in records] == [
        ("user", "first"),
        ("user", "second"),
        ("assistant", "third"),
    ]
    assert log.read_bytes().endswith(b"\n")
    warnings = [r.getMessage() for r in caplog.records if "half-written" in r.getMessage()]
    assert len(warnings) == 1 and str(log) in warnings[0]


def test_append_after_a_cut_is_numbered_from_the_whole_records(tmp_path):
    store = SessionStore(tmp_path)
    (tmp_path / "s-cut").mkdir()
    log = store.log_path("s-cut")
    append_session_record(log, UserRecord(time="2026-09-20T14:02:11Z", content="a"))
    kill_mid_append(log, UserRecord(time="2026-09-20T14:02:12Z", content="half"))

    store.append("s-cut", UserRecord(time="2026-09-20T14:02:13Z", content="b"))

    lines = list(read_records(log))
    assert [(line.number, line.record.content) for line in lines] == [(0, "a"), (1, "b")]
    assert lines[1].start == lines[0].end and lines[1].end == log.stat().st_size
