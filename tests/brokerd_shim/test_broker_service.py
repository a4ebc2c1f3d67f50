"""The shim in-process over its real socket: decisions, memoryd, labels, ledger and audit log."""

import datetime as dt
import json
import shutil
import stat
import time

import pytest

from brokerd_shim.ledger import Ledger
from brokerd_shim.memory_runtime import MEMORYD_UNREACHABLE, WRITE_UNKNOWN
from brokerd_shim.runtime import Runtime
from proto.labels import Label
from proto.messages import ToolResponse

from .conftest import NOTE_ANSWER, FakeMemoryd, Stack, add_grant, write_config

FETCH = '{"url": "https://example.org/notes"}'
ADD = '{"action": "add", "file": "memory", "text": "The release is in March."}'
RECALL = '{"query": "release"}'
CLEAN = {"class": "private", "untrusted": False}
TAINTED = {"class": "private", "untrusted": True}


def audit(stack: Stack) -> list[dict]:
    return [json.loads(line) for line in stack.audit_lines()]


def test_socket_and_folders_modes(stack):
    assert stat.S_IMODE(stack.socket.stat().st_mode) == 0o600
    assert stat.S_IMODE(stack.socket.parent.stat().st_mode) == 0o700
    for folder in ("ledger", "audit", "run"):
        assert stat.S_IMODE((stack.home / folder).stat().st_mode) == 0o700


def test_recall_goes_to_memoryd_with_a_clean_state(stack):
    reply = stack.call("recall", RECALL, call_id="c-recall")
    assert isinstance(reply, ToolResponse)
    assert reply.ok and reply.call_id == "c-recall"
    assert reply.label.to_wire() == CLEAN
    (call,) = stack.memoryd.calls
    assert (call.taint, call.untrusted, call.request.arguments) == ("private", False, RECALL)


def test_fetch_taints_and_a_later_add_becomes_an_untrusted_note(stack):
    fetched = stack.call("http_fetch", FETCH, call_id="c1")
    assert fetched.ok and "The release moved to March." in fetched.output
    assert fetched.label.to_wire() == TAINTED
    added = stack.call("memory", ADD, call_id="c2")
    assert added.output == NOTE_ANSWER
    (call,) = stack.memoryd.calls
    assert (call.taint, call.untrusted) == ("private", True)
    other = stack.call("memory", ADD, session="mm-other", call_id="c3")
    assert other.output.startswith("memory.md updated")
    assert stack.memoryd.calls[-1].untrusted is False


def test_a_restart_between_the_fetch_and_the_add_keeps_the_taint(stack):
    assert stack.call("http_fetch", FETCH).label.to_wire() == TAINTED
    stack.restart()
    added = stack.call("memory", ADD, call_id="c2")
    assert added.ok and added.output == NOTE_ANSWER
    assert stack.memoryd.calls[-1].untrusted is True
    assert json.loads((stack.home / "ledger" / "mm-test1.json").read_text()) == {
        "session": "mm-test1",
        **TAINTED,
    }


@pytest.mark.parametrize("deleted", ["the session's record", "all of ledger/"])
def test_a_deleted_ledger_never_makes_a_tainted_session_clean(stack, deleted):
    """Stop the shim, delete the ledger, start it again: the session that fetched a page takes
    the label its answered audit lines hold (untrusted), so its identity add reaches memoryd as
    untrusted; the strictest state is for lines that cannot tell (test_ledger_from_audit.py)."""
    assert stack.call("http_fetch", FETCH).label.to_wire() == TAINTED
    assert stack.call("recall", RECALL, session="mm-cleanone", call_id="c0").ok
    stack.stop()
    if deleted == "all of ledger/":
        shutil.rmtree(stack.home / "ledger")
    else:
        (stack.home / "ledger" / "mm-test1.json").unlink()
    stack.start()
    added = stack.call("memory", ADD, call_id="c2")
    assert added.ok and added.output == NOTE_ANSWER
    call = stack.memoryd.calls[-1]
    assert (call.taint, call.untrusted) == ("private", True)
    assert json.loads((stack.home / "ledger" / "mm-test1.json").read_text()) == {
        "session": "mm-test1",
        **TAINTED,
    }
    # A session whose record is gone takes its audit lines' label, as one whose record is there
    # keeps it: a clean recall leaves it clean either way; a new session starts clean.
    stack.call("memory", ADD, session="mm-cleanone", call_id="c3")
    assert stack.memoryd.calls[-1].untrusted is False
    fresh = stack.call("memory", ADD, session="mm-brandnew", call_id="c4")
    assert fresh.output.startswith("memory.md updated")
    assert (stack.memoryd.calls[-1].taint, stack.memoryd.calls[-1].untrusted) == ("private", False)


def test_memory_call_carries_the_state_before_its_own_result(stack):
    stack.memoryd.label = Label(klass="secret", untrusted=True)
    first = stack.call("recall", RECALL, call_id="c1")
    assert first.label.to_wire() == {"class": "secret", "untrusted": True}
    stack.call("recall", RECALL, call_id="c2")
    assert [(c.taint, c.untrusted) for c in stack.memoryd.calls] == [
        ("private", False),
        ("secret", True),
    ]


class Labelled(Runtime):
    """A runtime answering every call with a fixed label."""

    def __init__(self, label: Label | None):
        self.label = label

    async def run_labelled(self, spec):
        return True, f"ran {spec.tool}", self.label


@pytest.mark.parametrize(
    "tool, arguments, runtime_label, expected",
    [
        # http_fetch's grant says private, untrusted.
        ("http_fetch", FETCH, Label(klass="secret", untrusted=True), ("secret", True)),
        ("http_fetch", FETCH, Label(klass="secret", untrusted=False), ("secret", True)),
        ("http_fetch", FETCH, Label(klass="public", untrusted=False), ("private", True)),
        ("http_fetch", FETCH, None, ("private", True)),
        # recall's built-in grant says private, trusted.
        ("recall", RECALL, Label(klass="secret", untrusted=True), ("secret", True)),
        ("recall", RECALL, Label(klass="private", untrusted=True), ("private", True)),
        ("recall", RECALL, Label(klass="public", untrusted=False), ("private", False)),
        ("recall", RECALL, None, ("private", False)),
    ],
)
def test_labels_only_get_stricter(stack, tool, arguments, runtime_label, expected):
    stack.stop()
    stack.start(Labelled(runtime_label))
    reply = stack.call(tool, arguments)
    assert (reply.label.klass, reply.label.untrusted) == expected
    allowing, line = audit(stack)
    assert (allowing["decision"], allowing["ok"], allowing["label"]) == ("allow", None, None)
    assert (line["label"]["class"], line["label"]["untrusted"]) == expected
    state = Ledger(stack.home / "ledger").state("mm-test1").label
    assert (state.klass, state.untrusted) == expected


def test_audit_lines_for_every_decision(stack):
    stack.call("recall", RECALL, call_id="a1")
    stack.call("http_fetch", FETCH, call_id="a2")
    stack.call("shell", '{"cmd": "ls"}', call_id="a3")
    stack.call("memory", '{"action": "forget"}', call_id="a4")
    lines = audit(stack)
    # An allowed call's first line is written before it runs: no outcome, no label yet.
    before = [line for line in lines if line["ok"] is None]
    assert [(line["call_id"], line["decision"], line["label"]) for line in before] == [
        ("a1", "allow", None),
        ("a2", "allow", None),
    ]
    lines = [line for line in lines if line not in before]
    month = dt.datetime.now(dt.UTC).strftime("%Y-%m")
    path = stack.home / "audit" / f"{month}.jsonl"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [line["call_id"] for line in lines] == ["a1", "a2", "a3", "a4"]
    recall, fetch, shell, memory = lines
    assert set(recall) == {
        "time",
        "session",
        "call_id",
        "tool",
        "grant",
        "grant_sha256",
        "decision",
        "ok",
        "label",
    }
    builtin_sha = stack.running.broker.grants.current().builtins[0].sha256
    assert (recall["grant"], recall["grant_sha256"], recall["decision"]) == (
        "builtin-recall",
        builtin_sha,
        "allow",
    )
    assert recall["session"] == "mm-test1" and recall["label"] == CLEAN
    assert dt.datetime.strptime(recall["time"], "%Y-%m-%dT%H:%M:%SZ")
    assert (fetch["grant"], fetch["decision"], fetch["label"]) == ("http_fetch", "allow", TAINTED)
    assert (shell["grant"], shell["decision"], shell["label"]) == (None, "deny", None)
    assert shell["reason"] == "no grant allows shell"
    assert (memory["grant"], memory["decision"], memory["label"]) == (
        "builtin-memory",
        "deny",
        CLEAN,
    )
    assert memory["reason"].startswith("memory: ")


def test_a_grant_naming_memory_denies_every_call_until_removed(stack):
    path = add_grant(
        stack.home,
        "mem.toml",
        'tool = "memory"\nmode = "deny"\nmax_taint = "secret"\n'
        'result_class = "private"\nuntrusted = false\n',
    )
    for tool, arguments in [("recall", RECALL), ("memory", ADD), ("http_fetch", FETCH)]:
        reply = stack.call(tool, arguments)
        assert not reply.ok
        assert "runbook: grants-invalid" in reply.output
        assert "mem.toml: the policy of recall and memory is built in; remove this grant" in (
            reply.output
        )
        assert reply.label.to_wire() == CLEAN
    assert stack.memoryd.calls == []
    assert {line["decision"] for line in audit(stack)} == {"deny"}
    path.unlink()
    assert stack.call("recall", RECALL).ok


def test_broken_toml_denies_and_the_shim_goes_on(stack):
    add_grant(stack.home, "broken.toml", 'tool = "http_fetch\n')
    reply = stack.call("http_fetch", FETCH)
    assert not reply.ok and "broken.toml: not valid TOML" in reply.output
    assert "runbook: grants-invalid" in reply.output
    (stack.home / "grants" / "broken.toml").unlink()
    assert stack.call("http_fetch", FETCH).ok


def test_ask_mode_is_denied_with_the_reason(stack):
    (stack.home / "grants" / "http_fetch.toml").unlink()
    add_grant(
        stack.home,
        "fetch-ask.toml",
        'tool = "http_fetch"\nmode = "ask"\nmax_taint = "private"\n'
        'result_class = "private"\nuntrusted = true\n',
    )
    reply = stack.call("http_fetch", FETCH)
    assert not reply.ok and "needs the owner's approval under grant fetch-ask" in reply.output
    (line,) = audit(stack)
    assert (line["decision"], line["grant"]) == ("ask", "fetch-ask")
    assert Ledger(stack.home / "ledger").state("mm-test1").label.untrusted is False


def test_memoryd_down_fails_memory_calls_with_the_sentence(stack):
    stack.stop_memoryd()
    reply = stack.call("recall", RECALL)
    assert (reply.ok, reply.output) == (False, MEMORYD_UNREACHABLE)
    assert reply.label.to_wire() == CLEAN
    _, line = audit(stack)
    assert (line["decision"], line["ok"], line["reason"]) == ("allow", False, MEMORYD_UNREACHABLE)
    assert stack.call("http_fetch", FETCH).ok


def test_memoryd_too_slow_fails_after_the_configured_timeout(home, loop_thread):
    stack = Stack(home, write_config(home, timeout=0.3), loop_thread, FakeMemoryd(delay=5))
    stack.start_memoryd()
    stack.start()
    try:
        started = time.monotonic()
        reply = stack.call("recall", RECALL)
        assert time.monotonic() - started < 3
        assert (reply.ok, reply.output) == (False, MEMORYD_UNREACHABLE)
        # A write sent and not answered may have been applied (memoryd finishes what it began).
        reply = stack.call("memory", ADD)
        assert (reply.ok, reply.output) == (False, WRITE_UNKNOWN)
        line = audit(stack)[-1]
        assert (line["ok"], line["reason"]) == (False, WRITE_UNKNOWN)
    finally:
        stack.stop()
        stack.stop_memoryd()


def test_stop_removes_the_socket(stack):
    socket = stack.socket
    stack.stop()
    assert not socket.exists()
