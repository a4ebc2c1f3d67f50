"""The counts in printed sentences: singular for exactly one, thousands separated."""

import pytest

from proto.plural import counted


@pytest.mark.parametrize(
    "n, one, many, said",
    [
        (0, "note", None, "0 notes"),
        (1, "note", None, "1 note"),
        (2, "note", None, "2 notes"),
        (1, "entry", "entries", "1 entry"),
        (3, "entry", "entries", "3 entries"),
        (1208, "record", None, "1,208 records"),
    ],
)
def test_counted(n, one, many, said):
    assert counted(n, one, many) == said
