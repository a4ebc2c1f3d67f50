"""A reindex answers what the index it swapped in holds, whatever was written while it built:
a restore, a note, a session's new records, each landing between the build and the swap."""

import asyncio
import sqlite3
from pathlib import Path

import pytest

from tests.memoryd.owner_data_harness import Memoryd


def restore_first_backup(m: Memoryd, name: str) -> None:
    m.data("restore", name=name, replace=True)


def add_note(m: Memoryd, name: str) -> None:
    m.call({"action": "note", "text": "Gamma note about lighthouses, written mid-build."})


def say_more(m: Memoryd, name: str) -> None:
    m.say("s-late", "The ferry leaves at nine.", "Noted, nine o'clock.")


def held(m: Memoryd) -> tuple[int, int, int]:
    conn = sqlite3.connect(m.index.path)
    try:
        count = "SELECT count(*) FROM sources WHERE kind IN ({})"
        records = conn.execute(count.format("'session'")).fetchone()[0]
        notes = conn.execute(count.format("'noted', 'moved', 'dropped'")).fetchone()[0]
    finally:
        conn.close()
    return len(m.index.sessions()), records, notes


@pytest.mark.parametrize("during", [restore_first_backup, add_note, say_more])
def test_reindex_answers_what_the_swapped_in_index_holds(tmp_path: Path, during):
    m = Memoryd(tmp_path / "home")
    try:
        m.call({"action": "note", "text": "Alpha kept note about kayaks."})
        m.say("s-early", "Where is the kayak?", "In the shed.")
        name = Path(m.data("backup")["path"]).name
        for i in range(3):
            m.call({"action": "note", "text": f"Beta note {i} about zeppelins."})
        real = m.service._rebuild.build

        def build_then_write(index):
            built = real(index)
            during(m, name)  # lands after the build read the home, before the swap
            return built

        m.service._rebuild.build = build_then_write
        answered = asyncio.run(m.service._reindex())
        assert answered == held(m)
        if during is restore_first_backup:
            assert answered[2] == 1
    finally:
        m.close()
