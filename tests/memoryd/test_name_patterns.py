"""Every pattern that admits an id or a file name matches the whole of it.

Python's `$` also matches before a final newline, so `^...$` takes "note:3\n" or
"2026-11.jsonl\n": an id with a newline could reach a log line or a label, and a file named so
could be taken (listed, pruned, backed up) as one of memoryd's own. Each pattern is checked with a
value it must take, and the same value with a newline, a space or a NUL after it.
"""

import re

import pytest

from brokerd_shim import audit
from memoryd import home
from memoryd.data import backup, exportfiles, forget, layout
from memoryd.journal import forgotten, idform
from memoryd.memory import review
from memoryd.owner import promote

CASES = [
    (forgotten.KEY, "note:3"),
    (forgotten.KEY, "session:s-1:12"),
    (idform.EDIT_ID, "2026-11-30-0007"),
    (home.MONTH_FILE, "2026-11.jsonl"),
    (audit.MONTH_FILE, "2026-11.jsonl"),
    (backup.ARCHIVE_NAME, "memory-20261130T101010Z.tar.gz"),
    (backup.ARCHIVE_NAME, "memory-20261130T101010Z-2.tar.gz"),
    (exportfiles.EXPORT_NAME, "export-20261130T101010Z.jsonl"),
    (exportfiles.EXPORT_NAME, "export-20261130T101010Z-3.md"),
    (forget.NOTE, "note:12"),
    (forget.ENTRY, "memory.md:4"),
    (forget.SESSION, "session:abc_1:9"),
    (promote.NOTE_REF, "note:1"),
    (review.PENDING_ID, "p-2026-11-30-0001"),
    (layout.NAME, "memory.md"),
]


@pytest.mark.parametrize(("pattern", "value"), CASES, ids=[f"{p.pattern}:{v}" for p, v in CASES])
@pytest.mark.parametrize("tail", ["\n", " ", "\x00", "\r\n"])
def test_a_pattern_takes_the_value_and_nothing_after_it(
    pattern: re.Pattern[str], value: str, tail: str
) -> None:
    assert pattern.match(value)
    assert not pattern.match(value + tail)
    assert not pattern.fullmatch(value + tail)


def test_an_edit_id_read_from_a_journal_line_ends_where_the_id_ends() -> None:
    assert idform._DAY_NUMBER.search("2026-11-30-0007")
    assert not idform._DAY_NUMBER.search("2026-11-30-0007\n")
