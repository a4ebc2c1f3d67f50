"""brokerd-shim's own files in its home: an audit month file or a ledger record that is a FIFO or
a symbolic link is never waited on nor followed. A FIFO audit file would hang the start; a FIFO
ledger record would hold the one writer thread, so every session's calls, not only its own."""

import logging
import os

import pytest
from typer.testing import CliRunner

from brokerd_shim.audit import sessions_answered
from brokerd_shim.cli import app
from brokerd_shim.ledger import RECORD_BYTES, STRICTEST, Ledger
from tests.proto.nowait import without_waiting

LINE = '{"time":"t","session":"mm-outside1","call_id":"c"}\n'


def test_an_audit_file_that_is_a_fifo_is_logged_and_skipped(tmp_path, caplog):
    (tmp_path / "2026-08.jsonl").write_text(LINE.replace("outside1", "august01"))
    fifo = tmp_path / "2026-09.jsonl"
    os.mkfifo(fifo)
    with caplog.at_level(logging.ERROR):
        found = without_waiting(lambda: sessions_answered(tmp_path), fifo)
    assert found == {"mm-august01"}
    assert f"audit: {fifo} cannot be read (a FIFO, not a regular file)" in caplog.text


def test_an_audit_file_that_is_a_link_is_not_followed(tmp_path, caplog):
    outside = tmp_path / "outside.jsonl"
    outside.write_text(LINE)
    audit = tmp_path / "audit"
    audit.mkdir()
    (audit / "2026-09.jsonl").symlink_to(outside)
    assert sessions_answered(audit) == set()
    assert "a symbolic link, which is not followed" in caplog.text


@pytest.mark.parametrize("how", ["fifo", "link", "folder", "oversized"])
def test_a_ledger_record_that_is_no_record_fails_closed_without_waiting(tmp_path, caplog, how):
    path = tmp_path / "ledger" / "mm-s1.json"
    path.parent.mkdir()
    clean = '{"session": "mm-s1", "class": "private", "untrusted": false}\n'
    if how == "fifo":
        os.mkfifo(path)
    elif how == "link":
        (tmp_path / "clean.json").write_text(clean)
        path.symlink_to(tmp_path / "clean.json")
    elif how == "folder":
        path.mkdir()
    else:
        path.write_text(clean + " " * RECORD_BYTES)
    ledger = Ledger(path.parent)
    assert without_waiting(lambda: ledger.state("mm-s1"), path).label == STRICTEST
    assert "session mm-s1 taken as secret, untrusted" in caplog.text
    # Another session is served as ever.
    assert ledger.state("mm-s2").label.untrusted is False


def test_a_socket_path_too_long_says_why(tmp_path):
    socket = tmp_path / ("z" * 120) / "b.sock"
    config = tmp_path / "brokerd.toml"
    config.write_text(f'[paths]\nhome = "{tmp_path}/home"\n[broker]\nsocket = "{socket}"\n')
    result = CliRunner().invoke(app, ["serve", "--config", str(config)])
    assert result.exit_code == 2
    assert result.stderr == f"brokerd-shim: cannot serve {socket}: AF_UNIX path too long\n"
