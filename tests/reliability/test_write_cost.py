"""A memory write's cost must not grow with the journal (memoryd under load).

Every write journals one line, and the journal's id for it (YYYY-MM-DD-NNNN) is worked out from
the journal. If that means reading and parsing the whole month's file, each write costs time in
proportion to the writes before it in the month, and the one writer thread serialises them all.
bench_load.py for 60 s (16 clients) saw the p50 of memory writes go from 83 ms in the first
quarter of the run to 334 ms in the last; in-process a note took 1 ms with an empty journal, 5 ms
after 1,000 edits, 50 ms after 10,000 and 350 ms after 50,000. The measure here is the count of
journal lines parsed per write, not time.
"""

import datetime as dt
import json

from memoryd.home import Home
from memoryd.journal import journal as journal_module
from memoryd.memory.store import MemoryStore
from tests.callargs import loose_call
from tests.reliability.crash_harness import CLEAN, write_config


class CountingJson:
    """json as memoryd.journal.journal uses it, counting the lines it parses."""

    def __init__(self) -> None:
        self.loads_calls = 0

    def loads(self, *args, **kwargs):
        self.loads_calls += 1
        return json.loads(*args, **kwargs)

    def dumps(self, *args, **kwargs):
        return json.dumps(*args, **kwargs)


def _store_with_journal(tmp_path, lines: int) -> MemoryStore:
    write_config(tmp_path)
    home = Home(tmp_path / "home")
    store = MemoryStore(home, soul_starter=tmp_path / "soul.md")
    store.ensure()
    now = dt.datetime.now(dt.UTC)
    with open(home.edits_month(now), "w", encoding="utf-8") as f:
        for n in range(lines):
            line = {"id": f"{now:%Y-%m-%d}-{n + 1:04d}", "action": "note", "to": "notes.md"}
            f.write(json.dumps(line) + "\n")
    return store


def test_a_note_parses_a_bounded_number_of_journal_lines(tmp_path, monkeypatch):
    store = _store_with_journal(tmp_path, 5_000)
    counting = CountingJson()
    monkeypatch.setattr(journal_module, "json", counting)
    store.call(*loose_call({"action": "note", "text": "One more note."}, **CLEAN))
    assert counting.loads_calls <= 10


def test_the_id_after_a_long_journal_follows_the_last_one(tmp_path):
    """Whatever the fix, ids go on from the journal's last one."""
    store = _store_with_journal(tmp_path, 1_200)
    store.call(*loose_call({"action": "note", "text": "One more note."}, **CLEAN))
    assert store.journal.records()[-1].id.endswith("-1201")
