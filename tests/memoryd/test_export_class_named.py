"""An export gives every entry a class its format names (public, private, secret), so that an
import takes the file: a line whose class is not known (a hand edit journalled while the journal
was not whole carries "unknown"; a journal edited by hand may hold anything) exports the highest,
as the block takes it, rather than a value import refuses for the whole file."""

import json

import pytest

from memoryd.data.exportitems import _provenance
from memoryd.data.importitems import item_of
from memoryd.journal.journal import EditLine

ID = "2026-12-06-0003"


@pytest.mark.parametrize(
    ("fields", "klass"),
    [
        ({"session": "owner", "action": "hand-edit", "carried": "unknown"}, "secret"),
        ({"session": "s-1", "taint": "bogus", "action": "add"}, "secret"),
        ({"session": "s-1", "taint": "public", "action": "add"}, "public"),
        ({"session": "s-1", "taint": "secret", "action": "add"}, "secret"),
        ({"session": "owner", "action": "edit"}, "private"),
        ({"session": "s", "taint": "private", "action": "replace", "carried": "secret"}, "secret"),
    ],
)
def test_an_entrys_class_is_one_the_format_names(fields, klass):
    line = EditLine(id=ID, time="2026-12-06T05:00Z", file="memory.md", **fields)
    provenance = _provenance(line, "memory.md")
    assert provenance["class"] == klass
    item = {"kind": "entry", "file": "memory.md", "text": "An entry.", "provenance": provenance}
    assert item_of(json.dumps(item).encode()).provenance.klass == klass  # import takes it
