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


def test_unknown_session_starts_clean_and_writes_nothing(tmp_path):
    ledger = Ledger(tmp_path)
    assert ledger.state("s1").label == CLEAN
    ledger.raise_to("s1", PUBLIC)
    assert ledger.state("s1").label == CLEAN
    assert list(tmp_path.iterdir()) == []


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
    ledger = Ledger(tmp_path / "missing")
    with pytest.raises(LedgerFailed, match="result is withheld"):
        ledger.raise_to("s1", UNTRUSTED)
    assert ledger.state("s1").label == CLEAN
