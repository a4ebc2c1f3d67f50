"""A session the audit log answered but the ledger holds no record for (a release that wrote one
only when a session was raised, or a record deleted) takes the strictest label of its answered
audit lines; the strictest state only when those lines cannot tell it."""

import json

import pytest

from brokerd_shim.audit import AuditEntry, AuditLog
from brokerd_shim.ledger import CLEAN, STRICTEST, Ledger
from proto.labels import Label

UNTRUSTED = Label(klass="private", untrusted=True)
SECRET = Label(klass="secret", untrusted=False)


def old_line(session, call_id, label, decision="allow", ok=True):
    """One line as a release before the outcome line wrote it: the decision with its label."""
    return json.dumps(
        {
            "time": "2026-11-30T03:50:00Z",
            "session": session,
            "call_id": call_id,
            "tool": "memory",
            "grant": "g1",
            "grant_sha256": "0" * 64,
            "decision": decision,
            "ok": ok,
            "label": label,
        },
        separators=(",", ":"),
    )


def allowed(log, session, call_id, label, outcome=True):
    entry = dict(session=session, call_id=call_id, tool="recall", grant="g1", grant_sha256="0")
    log.append(AuditEntry(**entry, decision="allow", ok=None, label=None))
    if outcome:
        log.append(AuditEntry(**entry, decision="allow", ok=True, label=label))


@pytest.fixture
def home(tmp_path):
    (tmp_path / "audit").mkdir()
    return tmp_path


def test_a_clean_session_of_an_older_release_stays_clean(home, caplog):
    private = {"class": "private", "untrusted": False}
    lines = [old_line("wednesday", "c1", private), old_line("wednesday", "c2", None, "deny", False)]
    (home / "audit" / "2026-11.jsonl").write_text("\n".join(lines) + "\n")
    ledger = Ledger(home / "ledger", answered={"wednesday"})
    assert ledger.state("wednesday").label == CLEAN
    said = [r.getMessage() for r in caplog.records if "wednesday" in r.getMessage()]
    assert len(said) == 1 and "2 line(s)" in said[0] and "private" in said[0]
    record = json.loads((home / "ledger" / "wednesday.json").read_text())
    assert record == {"session": "wednesday", "class": "private", "untrusted": False}


def test_the_strictest_answered_line_gives_the_label(home):
    log = AuditLog(home / "audit")
    allowed(log, "s1", "c1", UNTRUSTED)
    allowed(log, "s1", "c2", CLEAN)
    allowed(log, "s2", "c1", SECRET)
    allowed(log, "s3", "c1", CLEAN)
    # A record deleted: the audit's lines still tell what it held.
    ledger = Ledger(home / "ledger", answered={"s1", "s2", "s3"})
    assert ledger.state("s1").label == UNTRUSTED
    assert ledger.state("s2").label == SECRET
    assert ledger.state("s3").label == CLEAN
    assert Ledger(home / "ledger").state("s1").label == UNTRUSTED


def test_an_allowed_call_with_no_outcome_line_fails_closed(home):
    log = AuditLog(home / "audit")
    allowed(log, "s1", "c1", CLEAN)
    allowed(log, "s1", "c2", CLEAN, outcome=False)  # ran; what it answered was never written
    assert Ledger(home / "ledger", answered={"s1"}).state("s1").label == STRICTEST


@pytest.mark.parametrize(
    "bad",
    [
        b'{"time":"x","session":"s1","call_id":"c9","decision":"allow","ok":true,"label":{"cl',
        b'{"time":"x","session":"s1","call_id":"c9","decision":"allow","ok":true,"label":null}',
        b'{"time":"x","session":"s1","call_id":"c9","decision":"allow","ok":true,'
        b'"label":{"class":"top","untrusted":false}}',
        b"\x00" * 100,  # damage that names no session
    ],
)
def test_lines_that_cannot_tell_the_label_fail_closed(home, bad, caplog):
    AuditLog(home / "audit").append(
        AuditEntry("s1", "c1", "recall", "g1", "0", "allow", True, CLEAN)
    )
    with (home / "audit").joinpath(next((home / "audit").iterdir()).name).open("ab") as f:
        f.write(bad + b"\n")
    assert Ledger(home / "ledger", answered={"s1"}).state("s1").label == STRICTEST
    assert "taken as secret, untrusted" in caplog.text


def test_an_unreadable_audit_file_fails_closed(home):
    (home / "audit" / "2026-11.jsonl").mkdir()  # not a file: cannot be read
    assert Ledger(home / "ledger", answered={"s1"}).state("s1").label == STRICTEST


def test_a_session_with_a_record_is_never_read_from_the_audit(home):
    log = AuditLog(home / "audit")
    allowed(log, "s1", "c1", SECRET)
    ledger = Ledger(home / "ledger")
    assert ledger.state("s1").label == CLEAN  # its record made at its first call
    assert Ledger(home / "ledger", answered={"s1"}).state("s1").label == CLEAN
