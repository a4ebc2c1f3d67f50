"""proto.trim: trimming is of Unicode White_Space only, as the spec's reference trims; the C0
controls U+001C..U+001F, which Python's str.strip() also takes for white space, stay."""

import pytest

from proto.trim import WHITE_SPACE, trim, words

SEPARATORS = "\x1c\x1d\x1e\x1f"


def test_white_space_is_pythons_white_space_without_the_four_separators():
    # str.isspace() is true for White_Space and for U+001C..U+001F (bidirectional class B or S);
    # White_Space has not changed since Unicode 6.3, so this ties the table to the property.
    spaces = {chr(c) for c in range(0x110000) if chr(c).isspace()}
    assert set(WHITE_SPACE) == spaces - set(SEPARATORS)
    assert len(WHITE_SPACE) == len(set(WHITE_SPACE)) == 25


@pytest.mark.parametrize("control", SEPARATORS)
def test_trim_keeps_a_separator_control_at_either_end(control):
    assert trim(f" {control}Owner has a cat.{control}\n") == f"{control}Owner has a cat.{control}"


def test_trim_removes_every_white_space_at_both_ends_and_nothing_inside():
    assert trim(WHITE_SPACE + "a \u3000 b" + WHITE_SPACE) == "a \u3000 b"
    assert trim(WHITE_SPACE) == ""


def test_words_split_on_white_space_runs_only():
    assert words(" Lyon;\nworks\u00a0from\x1fhome. ") == ["Lyon;", "works", "from\x1fhome."]
