"""Half of a surrogate pair in a call's arguments (JSON spells it "\\udc00"; UTF-8 cannot write
it): every tool's call is refused with a sentence naming the field, answered as a tool_response
and audited, and the audit writer writes any such text it is given rather than failing."""

import datetime as dt
import json

import pytest

from brokerd_shim.audit import AuditEntry, AuditLog
from brokerd_shim.ledger import Ledger
from proto.labels import Label

NOT_TEXT = "holds half of a surrogate pair, which is not text"
CLEAN = {"class": "private", "untrusted": False}


def audit(stack) -> list[dict]:
    return [json.loads(line) for line in stack.audit_lines()]


@pytest.mark.parametrize(
    "tool, arguments, grant, reason",
    [
        (
            "memory",
            '{"action":"note","text":"ok","\\udc00":1}',
            "builtin-memory",
            f"memory: a key {NOT_TEXT}",
        ),
        (
            "memory",
            '{"action":"note","text":"half an emoji \\ud83d here"}',
            "builtin-memory",
            f"memory: text: the string {NOT_TEXT}",
        ),
        (
            "recall",
            '{"query":"x\\udfff"}',
            "builtin-recall",
            f"recall: query: the string {NOT_TEXT}",
        ),
        (
            "http_fetch",
            '{"url":"https://example.org/\\udc00"}',
            "http_fetch",
            f"url: the string {NOT_TEXT}",
        ),
    ],
)
def test_a_call_holding_half_a_pair_is_denied_answered_and_audited(
    stack, tool, arguments, grant, reason
):
    reply = stack.call(tool, arguments, call_id="c-half")
    assert (reply.ok, reply.output, reply.call_id) == (False, reason, "c-half")
    assert reply.label is not None
    (line,) = audit(stack)
    assert (line["call_id"], line["decision"], line["grant"], line["ok"]) == (
        "c-half",
        "deny",
        grant,
        False,
    )
    assert line["reason"] == reason
    # Nothing ran: no allowing line was written, and memoryd got no call. The session holds what
    # the refusal was answered with (an argument refusal carries its grant's label).
    assert stack.memoryd.calls == []
    assert Ledger(stack.home / "ledger").state("mm-test1").label == reply.label
    assert stack.call("recall", '{"query":"x"}').ok


WHEN = dt.datetime(2026, 12, 5, 8, 0, tzinfo=dt.UTC)


def test_the_audit_writer_writes_text_that_has_no_utf8_form(tmp_path):
    """A decision is audited whatever strings its line carries: half of a surrogate pair is
    written as JSON's escape, and the line reads back as the very strings it was given."""
    log = AuditLog(tmp_path / "audit")
    denied = AuditEntry(
        session="mm-test1",
        call_id="c\udc00",
        tool="tool\ud800",
        grant=None,
        grant_sha256=None,
        decision="deny",
        ok=False,
        label=None,
        reason="no grant allows tool\ud800 \U0001f600",
    )
    log.append(denied, WHEN)
    outcome = AuditEntry(
        session="mm-test1",
        call_id="c2",
        tool="http_fetch",
        grant="http_fetch",
        grant_sha256="0" * 64,
        decision="allow",
        ok=False,
        label=Label(klass="private", untrusted=True),
        reason="the page said \udcff",
    )
    assert log.append_outcome(outcome, WHEN) is True
    raw = log.month_file(WHEN).read_bytes()
    first, second = (json.loads(line) for line in raw.decode("utf-8").splitlines())
    assert (first["call_id"], first["tool"], first["reason"]) == (
        "c\udc00",
        "tool\ud800",
        "no grant allows tool\ud800 \U0001f600",
    )
    assert "\U0001f600".encode() in raw  # other text is written as it is
    assert (second["reason"], second["label"]) == (
        "the page said \udcff",
        CLEAN | {"untrusted": True},
    )
