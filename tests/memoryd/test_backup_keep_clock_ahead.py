"""backup --keep N after the clock once ran ahead: the archives named in the future are neither
counted among the newest N nor removed, so the real daily backups made once the clock was mended
are kept; and a clock that is now behind every real backup removes none of them."""

import datetime as dt
import logging
import os
from types import SimpleNamespace

import pytest

from memoryd.data import backup
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import Clock


class Wall:
    """The wall clock backup.py names its archives by, set by hand."""

    def __init__(self) -> None:
        self.at = dt.datetime(2026, 12, 1, 3, tzinfo=dt.UTC)
        wall = self

        class Frozen(dt.datetime):
            @classmethod
            def now(cls, tz=None):
                return wall.at

        self.module = SimpleNamespace(datetime=Frozen, UTC=dt.UTC)


@pytest.fixture
def md(tmp_path, monkeypatch):
    m = Memoryd(tmp_path / "home", clock=Clock(dt.datetime(2026, 12, 1, 3, tzinfo=dt.UTC)))
    m.call({"action": "add", "file": "memory", "text": "Owner prefers answers in UTC."})
    wall = Wall()
    monkeypatch.setattr(backup, "dt", wall.module)
    m.wall = wall
    yield m
    m.close()


def daily(md: Memoryd, when: str, keep: int) -> dict:
    md.wall.at = dt.datetime.fromisoformat(when)
    return md.data("backup", keep=keep)


def left(md: Memoryd) -> list[str]:
    return sorted(os.listdir(md.home.root / "backups"))


def name(day: str) -> str:
    return f"memory-{day}T030000Z.tar.gz"


def test_the_real_backups_made_after_the_clock_ran_ahead_are_kept(md):
    for day in ("01", "02", "03"):  # a bad RTC at boot: three nights in June 2027
        daily(md, f"2027-06-{day}T03:00:00+00:00", 3)
    ahead = [name(f"202706{day}") for day in ("01", "02", "03")]
    for day in ("04", "05", "06", "07"):  # NTP mended it
        made = daily(md, f"2026-12-{day}T03:00:00+00:00", 3)
    assert left(md) == sorted([name("20261205"), name("20261206"), name("20261207"), *ahead])
    assert made["removed"] == [name("20261204")]
    assert made["ahead"] == ahead
    assert "neither counted among the newest 3 nor removed" in made["message"]
    # Once the clock passes their names they are counted again, by the time in their names.
    made = daily(md, "2027-06-04T03:00:00+00:00", 3)
    assert made["ahead"] == []
    assert left(md) == [name("20270602"), name("20270603"), name("20270604")]


def test_a_clock_behind_every_backup_removes_none_of_them(md):
    for day in ("01", "02", "03"):
        daily(md, f"2026-12-{day}T03:00:00+00:00", 1)
    assert left(md) == [name("20261203")]
    made = daily(md, "1970-01-01T03:00:00+00:00", 1)  # an RTC reset, no NTP yet
    assert made["removed"] == [] and made["ahead"] == [name("20261203")]
    assert left(md) == [name("19700101"), name("20261203")]


def test_a_clock_behind_never_calls_the_real_backups_leftovers_to_remove(md, caplog):
    for day in ("01", "02", "03"):  # made with a right clock
        daily(md, f"2026-12-{day}T03:00:00+00:00", 3)
    real = [name(f"202612{day}") for day in ("01", "02", "03")]
    with caplog.at_level(logging.WARNING, logger="memoryd.data.backupkeep"):
        made = daily(md, "1970-01-02T00:05:00+00:00", 3)  # an RTC reset, no NTP yet
    assert made["removed"] == [] and made["ahead"] == real
    said = made["message"].split("; left ", 1)[1]
    # Which came first cannot be told from the names: both are said, and what to do in each.
    assert "either the clock is behind now or it ran ahead when they were made" in said
    assert "Check the clock with date: if it is behind, keep them" in said
    assert "made while the clock ran ahead" not in said
    behind, right = said.split("Check the clock", 1)[1].split("if it is right, ", 1)
    assert "remove" not in behind and "remove them from backups/" in right
    logged = [r.getMessage() for r in caplog.records if "named after" in r.getMessage()]
    assert len(logged) == 1 and "\n" not in logged[0]
    assert "either the clock is behind now or it ran ahead" in logged[0]
    assert "check it with date" in logged[0] and "ran ahead named them" not in logged[0]
