"""Every role sets up its log the same way (proto.logline.configure_role) and exits with the same
status (EXIT_START_FAILED, 2) when it cannot start."""

import pytest
from typer.testing import CliRunner

from proto import logline


@pytest.fixture
def configured(monkeypatch):
    calls = []
    monkeypatch.setattr(logline, "configure_role", lambda *a, **k: calls.append(a))
    return calls


def _apps():
    from brokerd_shim.cli import app as brokerd
    from loopd_shim.cli import app as loopd
    from memoryd.cli import app as memoryd

    return {"memoryd": memoryd, "brokerd-shim": brokerd, "loopd-shim": loopd}


@pytest.mark.parametrize("role", ["memoryd", "brokerd-shim", "loopd-shim"])
def test_a_role_that_cannot_start_exits_2(role, tmp_path, configured):
    config = tmp_path / "role.toml"
    config.write_text("[nosuchsection]\nkey = 1\n")
    result = CliRunner().invoke(_apps()[role], ["serve", "--config", str(config)])
    assert result.exit_code == logline.EXIT_START_FAILED == 2, result.output
    assert result.stderr.count("\n") == 1 and "nosuchsection" in result.stderr
    assert result.stderr.startswith(f"{role}: ")
    assert configured == [()]


@pytest.mark.parametrize("role", ["memoryd", "brokerd-shim", "loopd-shim"])
def test_a_settings_file_the_role_may_not_read_is_said_in_its_own_line(
    role, tmp_path, configured, monkeypatch
):
    # click's own check of a readable path answered with a usage box before the role's loader,
    # which says in one line what it cannot read (here root reads it: the loader's line is the
    # bad section, which shows the loader, not click, decided).
    import os

    config = tmp_path / "role.toml"
    config.write_text("[nosuchsection]\nkey = 1\n")
    real = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode, **k: False if str(p) == str(config) else real(p, mode, **k)
    )
    result = CliRunner().invoke(_apps()[role], ["serve", "--config", str(config)])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"{role}: ")
    assert "Usage" not in result.stderr and "not readable" not in result.stderr


def test_memory_mcp_logs_through_the_role_setup(tmp_path, configured):
    pytest.importorskip("mcp")
    from memory_mcp.cli import app

    result = CliRunner().invoke(app, ["--home", str(tmp_path)], input="")
    assert result.exit_code == 0, result.output
    assert configured == [()]


def test_the_role_format_names_time_logger_and_level():
    import logging

    formatter = logline.OneLineFormatter(logline.ROLE_FORMAT)
    record = logging.LogRecord("memoryd.index.index", logging.WARNING, "x", 1, "a\nb", None, None)
    line = formatter.format(record)
    assert line.endswith(" memoryd.index.index WARNING a\\x0ab")
    assert "\n" not in line


def test_the_role_time_is_utc_with_its_zone_whatever_the_local_zone(monkeypatch):
    """A role run in the owner's zone logs UTC, said: lines sort across the end of summer time
    (01:30 EDT, then 01:10 EST 40 minutes later) and match the journal's times."""
    import logging
    import time

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        formatter = logline.OneLineFormatter(logline.ROLE_FORMAT)
        lines = []
        for created in (1793511001.805, 1793513401.25):  # 2026-11-01 05:30:01Z and 06:10:01Z
            record = logging.LogRecord("memoryd.memory.store", 20, "x", 1, "e", None, None)
            record.created, record.msecs = created, (created % 1) * 1000
            lines.append(formatter.format(record))
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert lines[0].startswith("2026-11-01T05:30:01.805Z memoryd.memory.store INFO"), lines
    assert lines[1].startswith("2026-11-01T06:10:01.250Z "), lines
    assert lines == sorted(lines)
