"""The ledger: session states on disk, only ever stricter, failing closed on damage."""

import json
import stat

import pytest

from brokerd_shim.errors import LedgerFailed
from brokerd_shim.ledger import CLEAN, STRICTEST, Ledger
from proto.labels import Label

UNTRUSTED = Label(klass="private", untrusted=True)
PUBLIC = Label(klass="public", untrusted=False)
SECRET = Label(klass="secret", untrusted=False)


def test_a_new_session_starts_clean_and_its_record_is_created(tmp_path):
    ledger = Ledger(tmp_path)
    assert ledger.state("s1").label == CLEAN
    ledger.raise_to("s1", PUBLIC)
    assert ledger.state("s1").label == CLEAN
    assert json.loads((tmp_path / "s1.json").read_text()) == {
        "session": "s1",
        "class": "private",
        "untrusted": False,
    }


def test_a_missing_record_of_a_session_the_audit_answered_fails_closed(tmp_path, caplog):
    ledger = Ledger(tmp_path, answered={"s1"})
    assert ledger.state("s1").label == STRICTEST
    assert "s1" in caplog.text and "missing" in caplog.text
    # Written back, so the strictest state outlives the next restart whatever the audit says.
    assert Ledger(tmp_path).state("s1").label == STRICTEST
    assert Ledger(tmp_path, answered={"s1"}).state("s2").label == CLEAN


@pytest.mark.parametrize(
    "labels, expected",
    [
        ([UNTRUSTED], UNTRUSTED),
        ([UNTRUSTED, PUBLIC], UNTRUSTED),
        ([SECRET, PUBLIC], SECRET),
        ([UNTRUSTED, SECRET], Label(klass="secret", untrusted=True)),
        ([PUBLIC, PUBLIC], CLEAN),
    ],
)
def test_state_only_gets_stricter_and_survives_a_new_ledger(tmp_path, labels, expected):
    ledger = Ledger(tmp_path)
    for label in labels:
        ledger.raise_to("s1", label)
    assert ledger.state("s1").label == expected
    assert Ledger(tmp_path).state("s1").label == expected


def test_file_format_and_mode(tmp_path):
    Ledger(tmp_path).raise_to("mm-abc", UNTRUSTED)
    path = tmp_path / "mm-abc.json"
    assert json.loads(path.read_text()) == {
        "session": "mm-abc",
        "class": "private",
        "untrusted": True,
    }
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["mm-abc.json"]


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"[]",
        b'{"session": "other", "class": "private", "untrusted": false}',
        b'{"session": "s1", "class": "top", "untrusted": false}',
        b'{"session": "s1", "class": "private", "untrusted": 0}',
        b'{"session": "s1", "class": "private"}',
        b"\xff",
    ],
)
def test_damaged_file_is_taken_as_strictest(tmp_path, content):
    (tmp_path / "s1.json").write_bytes(content)
    assert Ledger(tmp_path).state("s1").label == STRICTEST


def test_session_id_is_checked_before_forming_a_path(tmp_path):
    with pytest.raises(LedgerFailed):
        Ledger(tmp_path).state("../escape")


def test_unwritable_folder_withholds(tmp_path):
    folder = tmp_path / "ledger"
    ledger = Ledger(folder)
    assert ledger.state("s1").label == CLEAN
    (folder / "s1.json").unlink()
    folder.rmdir()
    folder.write_text("")  # the folder is now a file: nothing can be written under it
    with pytest.raises(LedgerFailed, match="result is withheld"):
        ledger.raise_to("s1", UNTRUSTED)
    assert Ledger(folder).state("s2").label == STRICTEST


def test_sessions_answered_reads_every_month_and_survives_damage(tmp_path):
    from brokerd_shim.audit import sessions_answered

    (tmp_path / "2026-08.jsonl").write_text(
        '{"time":"t","session":"mm-august1","call_id":"c"}\n'
        '{"time":"t","session":"../escape","call_id":"c"}\n'
        "not json at all\n"
    )
    (tmp_path / "2026-09.jsonl").write_bytes(
        b'{"time":"t","session":"mm-sept0001","call_id":"c","reason":"\\"session\\":\\"mm-fake\\""}\n'
        b'\xff\xfe{"time":"t","session":"mm-damaged1","ca'  # a torn last line still names it
    )
    (tmp_path / "notes.txt").write_text('{"session":"mm-other"}\n')
    assert sessions_answered(tmp_path) == {"mm-august1", "mm-sept0001", "mm-damaged1"}
    assert sessions_answered(tmp_path / "absent") == set()
