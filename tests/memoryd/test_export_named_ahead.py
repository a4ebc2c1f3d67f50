"""An export made while the clock ran ahead is named after every export made once the clock was
set right: the next export replaces it as it does the older ones (README: a new export replaces
the older ones, but for any under ten minutes old), and memoryd's log names it. One named ahead by
less than the ten minutes, as after the clock went back a little, is left as a fresh one; and so
is one this memoryd made under ten minutes ago by the monotonic clock, whatever its name says."""

import datetime as dt
import logging
import os

import pytest

from memoryd.data import exportfiles
from memoryd.data.exportfiles import FRESH_SECONDS
from tests.memoryd.owner_data_harness import Memoryd


class Monotonic:
    """exportfiles' monotonic clock, moved by the test alone: no step of the wall clock moves it."""

    def __init__(self):
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def mono(monkeypatch):
    clock = Monotonic()
    monkeypatch.setattr(exportfiles, "_monotonic", clock)
    monkeypatch.setattr(exportfiles, "_made", {})
    return clock


@pytest.fixture
def md(tmp_path, mono):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def test_an_export_named_half_a_year_ahead_is_replaced_and_logged(md, mono, caplog):
    md.clock.advance(days=180)  # a bad RTC at boot
    ahead = md.data("export")["path"]
    md.clock.advance(days=-180)  # NTP sets it right
    mono.t += FRESH_SECONDS  # ten minutes later
    with caplog.at_level(logging.WARNING, logger="memoryd.data.exportfiles"):
        now = md.data("export", format="markdown")["path"]
    assert not os.path.exists(ahead) and os.path.exists(now)
    [said] = [r.getMessage() for r in caplog.records]
    assert said.startswith(f"{ahead}: removed, an export named 180 days after now (either the")


@pytest.mark.parametrize("back", [dt.timedelta(seconds=5), dt.timedelta(seconds=FRESH_SECONDS - 1)])
def test_an_export_named_ahead_within_ten_minutes_is_left_as_fresh(md, mono, caplog, back):
    first = md.data("export")["path"]
    md.clock.now -= back  # the clock went back a little since: its bxctl may still be reading it
    with caplog.at_level(logging.WARNING, logger="memoryd.data.exportfiles"):
        second = md.data("export")["path"]
    assert os.path.exists(first) and os.path.exists(second)
    assert not caplog.records
    md.clock.advance(seconds=FRESH_SECONDS + back.total_seconds())
    mono.t += FRESH_SECONDS
    md.data("export")
    assert not os.path.exists(first)


@pytest.mark.parametrize("days", [1, -1])
def test_an_export_made_seconds_ago_is_fresh_whatever_the_clock_did_since(md, mono, days):
    """The clock set right (back or forward) between two exports a few seconds apart: the first
    is still being read by its bxctl, and stays until ten minutes have passed on a clock no step
    moves; then the next export replaces it, as every older one."""
    md.clock.advance(days=days)
    first = md.data("export")["path"]
    md.clock.advance(days=-days)
    mono.t += 2
    second = md.data("export")["path"]
    assert os.path.exists(first) and os.path.exists(second)
    mono.t += FRESH_SECONDS
    md.clock.advance(seconds=FRESH_SECONDS)
    md.data("export")
    assert not os.path.exists(first) and not os.path.exists(second)


def test_an_export_named_ahead_by_an_earlier_run_is_replaced(md, mono):
    """Made by a memoryd since stopped: no bxctl of that run still reads it."""
    md.clock.advance(days=30)
    ahead = md.data("export")["path"]
    md.clock.advance(days=-30)
    exportfiles._made.clear()  # memoryd restarted
    md.data("export")
    assert not os.path.exists(ahead)
