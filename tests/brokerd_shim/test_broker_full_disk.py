"""The audit log on a full disk: every answer stays true to what happened.

A full disk is played by the process's file size limit (RLIMIT_FSIZE, with SIGXFSZ ignored): a
write past it is cut short, then fails (EFBIG), as one on a full disk does (ENOSPC). The limit is
set just above the audit file's size, so the files written on the way (ledger records, well under
it) are unaffected.
"""

import json
import logging
import resource
import signal

import pytest

from brokerd_shim.audit import AuditEntry, AuditLog
from proto.client import RemoteError
from proto.files import append_line
from proto.labels import Label
from proto.messages import MemoryCall, ToolResponse

from .conftest import Stack

WRITE = '{"action": "add", "file": "memory", "text": "The curlew came back."}'
RECALL = '{"query": "curlew"}'
APPLIED = "memory.md updated (22 of 2,200 characters); it takes effect in the next session"


@pytest.fixture
def file_size_limit():
    """limit(extra): no file of this process may grow past the audit file's size plus extra."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    def limit(path, extra: int = 0) -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size + extra, hard))

    def lift() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))

    limit.lift = lift
    yield limit
    lift()
    signal.signal(signal.SIGXFSZ, old_handler)


def month_file(stack: Stack):
    (path,) = (stack.home / "audit").glob("*.jsonl")
    return path


def whole_lines(path) -> list[dict]:
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return [json.loads(line) for line in data.decode().splitlines()]


@pytest.mark.parametrize(
    "tool, arguments, decision",
    [("memory", WRITE, "allow"), ("recall", RECALL, "allow"), ("shell", "{}", "deny")],
)
def test_a_call_whose_audit_line_does_not_fit_is_refused_before_it_runs(
    stack, file_size_limit, tool, arguments, decision
):
    assert stack.call("recall", RECALL, call_id="warm").ok
    path = month_file(stack)
    before = path.read_bytes()
    file_size_limit(path, extra=40)  # room for part of a line only
    with pytest.raises(RemoteError) as refused:
        stack.call(tool, arguments, call_id="c1")
    assert str(refused.value) == (
        "brokerd-shim cannot write its audit log (File too large); the call was not run"
    )
    assert [c.request.call_id for c in stack.memoryd.calls] == ["warm"]
    assert path.read_bytes() == before  # the part that fitted is cut back
    file_size_limit.lift()
    assert stack.call(tool, arguments, call_id="c2").label is not None
    assert whole_lines(path)[-1]["call_id"] == "c2"


def test_a_write_applied_as_the_disk_fills_is_answered_as_applied(stack, file_size_limit, caplog):
    """memoryd applies the write, then the disk is full: the outcome's line cannot be written, and
    the answer is still memoryd's, so the agent does not write the note a second time."""
    caplog.set_level(logging.INFO, logger="brokerd_shim")
    assert stack.call("recall", RECALL, call_id="warm").ok
    path = month_file(stack)

    def apply_then_fill(message: MemoryCall) -> ToolResponse:
        file_size_limit(path, extra=40)
        return ToolResponse(call_id=message.request.call_id, ok=True, output=APPLIED, label=None)

    stack.memoryd.answer = apply_then_fill
    reply = stack.call("memory", WRITE, call_id="c1")
    assert (reply.ok, reply.output) == (True, APPLIED)
    assert [c.request.call_id for c in stack.memoryd.calls] == ["warm", "c1"]
    lines = whole_lines(path)
    # The line allowing the write is there; its outcome's was cut back whole.
    assert [(line["call_id"], line["ok"]) for line in lines] == [
        ("warm", None),
        ("warm", True),
        ("c1", None),
    ]
    assert "'memory' allowed by builtin-memory, ok=True, private; its outcome is missing" in (
        caplog.text
    )


def test_a_full_disk_is_logged_once_not_per_call(stack, file_size_limit, caplog):
    caplog.set_level(logging.INFO, logger="brokerd_shim")
    assert stack.call("recall", RECALL, call_id="warm").ok
    path = month_file(stack)
    file_size_limit(path)
    for n in range(5):
        with pytest.raises(RemoteError):
            stack.call("recall", RECALL, call_id=f"c{n}")
    failures = [r for r in caplog.records if r.name == "brokerd_shim.audit"]
    assert [r.levelname for r in failures] == ["ERROR"]
    assert failures[0].getMessage().startswith(f"audit: cannot append to {path} (File too large)")
    file_size_limit.lift()
    assert stack.call("recall", RECALL, call_id="c9").ok
    again = [r.getMessage() for r in caplog.records if r.name == "brokerd_shim.audit"][1:]
    assert again == [f"audit: {path} is written again; 5 line(s) could not be written before"]


def test_a_line_that_does_not_fit_leaves_the_file_as_it_was(tmp_path, file_size_limit):
    path = tmp_path / "2026-09.jsonl"
    path.write_bytes(b'{"session":"mm-a"}\n{"session":"mm-b"')  # an editor lost the last newline
    file_size_limit(path, extra=5)
    with pytest.raises(OSError, match="File too large"):
        append_line(path, '{"session":"mm-c"}')
    assert path.read_bytes() == b'{"session":"mm-a"}\n{"session":"mm-b"'
    file_size_limit.lift()
    append_line(path, '{"session":"mm-c"}')
    assert path.read_bytes().splitlines() == [
        b'{"session":"mm-a"}',
        b'{"session":"mm-b"',
        b'{"session":"mm-c"}',
    ]


def test_an_outcome_line_that_does_not_fit_is_reported_not_raised(tmp_path, file_size_limit):
    audit = AuditLog(tmp_path)
    entry = AuditEntry("mm-a", "c1", "recall", "builtin-recall", "0" * 64, "allow", None, None)
    audit.append(entry)
    (path,) = tmp_path.glob("*.jsonl")
    file_size_limit(path)
    assert audit.append_outcome(entry) is False
    file_size_limit.lift()
    assert audit.append_outcome(entry) is True
    assert len(whole_lines(path)) == 2


def test_a_result_withheld_after_the_call_ran_says_it_ran(stack, file_size_limit):
    """A recall answered as secret must raise the session's state before its output goes out; if
    the ledger cannot take it, the output is withheld, and the answer says the call ran."""
    assert stack.call("recall", RECALL, call_id="warm").ok
    ledger = stack.home / "ledger" / "mm-test1.json"

    def answer_secret_then_fill(message: MemoryCall) -> ToolResponse:
        file_size_limit(ledger, extra=-20)  # a new record no longer fits
        return ToolResponse(
            call_id=message.request.call_id,
            ok=True,
            output="the launch code",
            label=Label(klass="secret", untrusted=False),
        )

    stack.memoryd.answer = answer_secret_then_fill
    with pytest.raises(RemoteError, match=r"the result is withheld \(the call itself ran\)$"):
        stack.call("recall", RECALL, call_id="c1")
    assert json.loads(ledger.read_text())["class"] == "private"
