"""proto.jsonread: every way bytes or text fail to be JSON, nesting past the parser's depth
among them (json.loads raises RecursionError there), is one NotJson, a ValueError."""

import pytest

from proto.errors import ProtoError
from proto.jsonread import DEEP, NotJson, loads, loads_or_none

NESTED = "[" * 200_000 + "]" * 200_000


@pytest.mark.parametrize(
    "data",
    [NESTED, NESTED.encode(), '{"a": ' + "{" * 5000, "", b"\xff\xfe{", "1" * 5000, "{'a': 1}"],
)
def test_whatever_is_not_json_is_not_json(data):
    with pytest.raises(NotJson) as raised:
        loads(data)
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, ProtoError)
    assert "\n" not in str(raised.value) and str(raised.value)
    assert loads_or_none(data) is None


def test_the_depth_is_said_as_such():
    with pytest.raises(NotJson, match=DEEP):
        loads(NESTED)


def test_json_reads_as_json_loads_reads_it():
    assert loads(b'{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}
    nested = loads_or_none("[" * 50 + "]" * 50)  # as deep as any file memoryd writes
    for _ in range(49):
        nested = nested[0]
    assert nested == []
