"""bxctl's waits hold whatever memoryd does with its answer: one sent a byte at a time ends at
the command's stated wait, and a long command's answer stopped after its first bytes (a memoryd
SIGSTOPped while it wrote) is said, as a memoryd silent from the start is, to have stopped
answering, with what the request sent may have left."""

import time

import pytest
from typer.testing import CliRunner

from bxctl import cli, reach
from bxctl.cli import app
from tests.fakepeer import ANNOUNCED, Peers, cut_after, trickling

runner = CliRunner()


@pytest.fixture
def peer(tmp_path):
    peers = Peers(tmp_path)
    yield peers.start
    peers.close()


def test_a_long_commands_answer_stopped_part_way_is_said_in_seconds(peer, tmp_path, monkeypatch):
    monkeypatch.setattr(reach, "WATCH_EVERY", 0.1)
    monkeypatch.setattr(reach, "PROBE_TIMEOUT", 0.3)
    monkeypatch.setattr(reach, "SILENT_LIMIT", 1.0)
    monkeypatch.setattr(reach, "ADMIN_TIMEOUT", 0.5)  # so that a wait of 8 s is watched
    monkeypatch.setattr(cli, "REINDEX_TIMEOUT", 8.0)  # a failure here waits no hour
    path = peer(cut_after(ANNOUNCED[:2]))  # every probe, too, is read and never answered
    started = time.monotonic()
    result = runner.invoke(
        app, ["reindex", "--memory-socket", path], env={"BOXMAKER_HOME": str(tmp_path)}
    )
    took = time.monotonic() - started
    assert result.exit_code == 3, (result.output, result.exception)
    [line] = result.stderr.splitlines()
    assert line.startswith(f"bxctl: memoryd stopped answering on {path}: "), line
    assert "the reindex it was sent may have been applied or may still be" in line, line
    assert took < 5, took


def test_an_answer_sent_a_byte_at_a_time_ends_at_the_stated_wait(peer, tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "REINDEX_TIMEOUT", 1.0)  # a read's wait: not watched
    path = peer(trickling(0.1))
    started = time.monotonic()
    result = runner.invoke(
        app, ["reindex", "--memory-socket", path], env={"BOXMAKER_HOME": str(tmp_path)}
    )
    took = time.monotonic() - started
    assert result.exit_code == 3, (result.output, result.exception)
    [line] = result.stderr.splitlines()
    assert line.startswith(f"bxctl: memoryd did not answer on {path} in 1 seconds"), line
    assert "the reindex it was sent may have been applied or may still be" in line, line
    assert took < 3, took
