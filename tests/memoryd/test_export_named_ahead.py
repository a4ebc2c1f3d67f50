"""An export made while the clock ran ahead is named after every export made once the clock was
set right: the next export replaces it as it does the older ones (README: a new export replaces
the older ones, but for any under ten minutes old), and memoryd's log names it. One named ahead by
less than the ten minutes, as after the clock went back a little, is left as a fresh one."""

import datetime as dt
import logging
import os

import pytest

from memoryd.data.exportfiles import FRESH_SECONDS
from tests.memoryd.owner_data_harness import Memoryd


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def test_an_export_named_half_a_year_ahead_is_replaced_and_logged(md, caplog):
    md.clock.advance(days=180)  # a bad RTC at boot
    ahead = md.data("export")["path"]
    md.clock.advance(days=-180)  # NTP sets it right
    with caplog.at_level(logging.WARNING, logger="memoryd.data.exportfiles"):
        now = md.data("export", format="markdown")["path"]
    assert not os.path.exists(ahead) and os.path.exists(now)
    [said] = [r.getMessage() for r in caplog.records]
    assert said.startswith(f"{ahead}: removed, an export named 180 days after now (either the")


@pytest.mark.parametrize("back", [dt.timedelta(seconds=5), dt.timedelta(seconds=FRESH_SECONDS - 1)])
def test_an_export_named_ahead_within_ten_minutes_is_left_as_fresh(md, caplog, back):
    first = md.data("export")["path"]
    md.clock.now -= back  # the clock went back a little since: its bxctl may still be reading it
    with caplog.at_level(logging.WARNING, logger="memoryd.data.exportfiles"):
        second = md.data("export")["path"]
    assert os.path.exists(first) and os.path.exists(second)
    assert not caplog.records
    md.clock.advance(seconds=FRESH_SECONDS + back.total_seconds())
    md.data("export")
    assert not os.path.exists(first)
