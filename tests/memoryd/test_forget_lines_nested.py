"""A journal line nested deeper than the JSON parser goes (a damaged month: "[" some thousands
deep) is no forget line: the read of the forget lines passes it over, as it passes over any other
line that is not JSON, rather than raising RecursionError at every recall and start; and a session
record's call row so nested is read as arguments cut short, never an error of the indexer."""

from memoryd.data import matching
from memoryd.journal import forgetlines, forgotten


def test_a_deeply_nested_line_is_no_forget_line_and_raises_nothing():
    deep = b'{"action": "forget", "forgot": ' + b"[" * 100_000 + b"\n"
    assert forgetlines.forget_line(deep) is None
    assert forgetlines.parse(deep) == forgetlines.NONE
    found = forgetlines.Found()  # a month read on from where it was read to (forgetread.py)
    found.take(deep)
    assert found.answer() == forgetlines.NONE
    listed = frozenset({forgotten.digest("x")})
    assert not matching.holds_forgotten("call", "memory " + "[" * 100_000, listed)
    parsed = '{"x": ' * 990 + "1" + "}" * 990  # as deep as the parser goes, and walked
    assert not matching.holds_forgotten("call", "memory " + parsed, listed)
