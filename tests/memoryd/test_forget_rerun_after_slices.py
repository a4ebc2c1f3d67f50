"""A forget of a text many records hold, killed between two of its slices, is finished by running
it again, and that run costs what is left: the keys that still hold rows are found in one pass
over the index, not one scan a key, so the many keys whose rows the first run already deleted
cost nothing on the writer (a scan of the index each, all in one writer job, held it for minutes
at 30,000 such keys). A forget that was not stopped goes as before."""

import json
import time

import pytest

from memoryd.data import forget, purge, purgeslices, taken, targets
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.test_forget_copies_in_slices import rows_of_rep

TEXT = "please remind me to water the ficus plant every tuesday morning"
COPIES = 400
SLICES_BEFORE_KILL = 4


class Killed(Exception):
    """memoryd killed: nothing after it runs."""


def _counted(monkeypatch, module, name: str, calls: list[str]) -> None:
    real = getattr(module, name, None)
    if real is None:
        return

    def counting(*args, **kwargs):
        calls.append(name)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)


def test_a_forget_killed_between_slices_is_finished_by_a_rerun_at_the_cost_of_what_is_left(
    tmp_path, monkeypatch
):
    home = tmp_path / "home"
    m = Memoryd(home)
    try:
        m.say("rep", *[t for n in range(COPIES) for t in (TEXT, f"ok noted number {n}")])
        assert rows_of_rep(m) == COPIES
        monkeypatch.setattr(purgeslices, "CHUNK_ROWS", 20)
        monkeypatch.setattr(purgeslices, "SLICE_SECONDS", 0.0)  # one chunk a slice
        real = purgeslices._slice
        ran: list[int] = []

        def killed_part_way(index) -> bool:
            if len(ran) == SLICES_BEFORE_KILL:
                raise Killed
            ran.append(1)
            return real(index)

        monkeypatch.setattr(purgeslices, "_slice", killed_part_way)
        with pytest.raises(Killed):
            m.admin("forget", {"id": "session:rep:0"})
    finally:
        m.close()
    monkeypatch.undo()

    m = Memoryd(home)
    try:
        left = rows_of_rep(m)
        assert 0 < left < COPIES - 20 * SLICES_BEFORE_KILL + 1, left
        assert TEXT not in m.recall("ficus plant tuesday")  # listed: not recalled meanwhile
        calls: list[str] = []
        for module in (forget, purge, purgeslices, taken, targets):
            _counted(monkeypatch, module, "rows_of", calls)  # a scan of the index for one key
            _counted(monkeypatch, module, "condition", calls)  # a delete by one key's scan
        started = time.monotonic()
        said = json.loads(m.admin("forget", {"id": "session:rep:0"}))["message"]
        took = time.monotonic() - started
        assert said.startswith("forgot record 0 of session rep"), said
        assert rows_of_rep(m) == 0
        assert purgeslices.left(m.index) == 0
        assert TEXT not in m.recall("ficus plant tuesday")
        # the keys found no rows (already deleted) are looked for together, never one by one
        assert len(calls) <= 2, (len(calls), COPIES - left)
        assert took < 5, took
    finally:
        m.close()


def test_a_forget_not_stopped_still_takes_every_copy(tmp_path):
    m = Memoryd(tmp_path / "home")
    try:
        m.say("rep", *[t for n in range(50) for t in (TEXT, f"ok noted number {n}")])
        m.say("one", "a lone remark about quinces")
        said = json.loads(m.admin("forget", {"id": "session:rep:0"}))["message"]
        assert "49 more session records that held it" in said, said
        assert rows_of_rep(m) == 0
        assert TEXT not in m.recall("ficus plant tuesday")
        assert "quinces" in m.recall("quinces")
    finally:
        m.close()
