"""Entries of memory.md and user.md: parsing (tolerant of hand edits), rendering, entry rules."""

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.errors import FileDamaged
from memoryd.memory import check, entries


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("\n", []),
        ("one", ["one"]),
        ("one\n", ["one"]),
        ("one\n§\ntwo", ["one", "two"]),
        ("one\n§\ntwo\n", ["one", "two"]),
        ("first line\nsecond line\n§\nthird", ["first line\nsecond line", "third"]),
        # separators at the start or end, or two in a row, give no empty entry
        ("§\none\n§\n", ["one"]),
        ("one\n§\n§\ntwo", ["one", "two"]),
        ("§", []),
        # a separator line with spaces around § is a separator; entries are trimmed
        ("  one  \n  §  \n\ttwo\n\n", ["one", "two"]),
        # § inside a line is text
        ("costs §5\n§\nsection § two", ["costs §5", "section § two"]),
        ("\n\none\n\n\n§\n\n", ["one"]),
    ],
)
def test_parse(text, expected):
    assert entries.parse(text) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"\xef\xbb\xbfone\n\xc2\xa7\ntwo\n", ["one", "two"]),  # BOM
        (b"one\r\n\xc2\xa7\r\ntwo\r\n", ["one", "two"]),  # CRLF
        (b"\xef\xbb\xbfa\r\nb\r\n\xc2\xa7\r\n", ["a\nb"]),
        (b"one\r\xc2\xa7\rtwo\r", ["one", "two"]),  # a lone CR (classic Mac line ends)
        (b"a\rb\r\n\xc2\xa7\ntwo\r", ["a\nb", "two"]),  # CR, CRLF and LF mixed
        (b"a\r\r\xc2\xa7\r\r\rtwo", ["a", "two"]),
    ],
)
def test_decode_reads_bom_and_crlf_as_absent(data, expected):
    assert entries.parse(entries.decode(data, "memory.md")) == expected


def test_decode_refuses_invalid_utf8_naming_the_file():
    with pytest.raises(FileDamaged, match=r"^user\.md is not valid UTF-8 \(byte 3\)$"):
        entries.decode(b"abc\xff", "user.md")


@pytest.mark.parametrize(
    ("items", "text", "data"),
    [
        ([], "", b""),
        (["one"], "one", b"one\n"),
        (["one", "two"], "one\n\xa7\ntwo".replace("\xa7", "§"), "one\n§\ntwo\n".encode()),
        (["a\nb", "c"], "a\nb\n§\nc", "a\nb\n§\nc\n".encode()),
    ],
)
def test_render_and_file_bytes(items, text, data):
    assert entries.render(items) == text
    assert entries.length(items) == len(text)
    assert entries.file_bytes(items) == data


_LINE = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=20
)


@st.composite
def valid_entries(draw):
    lines = draw(st.lists(_LINE, min_size=1, max_size=4))
    entry = entries.normalise("\n".join(lines))
    return entry


@given(st.lists(valid_entries(), max_size=6))
def test_rendered_entries_parse_back(items):
    # What memoryd writes: entries of a valid shape that pass the check (so no U+FEFF, which a
    # file's first bytes would read as a byte order mark).
    items = [e for e in items if entries.entry_problem(e) is None and check.problem(e) is None]
    assert entries.parse(entries.render(items)) == items
    assert entries.parse(entries.decode(entries.file_bytes(items), "memory.md")) == items


@pytest.mark.parametrize(
    ("entry", "sentence"),
    [
        ("a fact", None),
        ("two\nlines", None),
        ("costs §5", None),
        ("", entries.EMPTY_ENTRY),
        ("before\n§\nafter", entries.SEPARATOR_LINE),
        ("before\n  §  ", entries.SEPARATOR_LINE),
        ("§", entries.SEPARATOR_LINE),
    ],
)
def test_entry_problem(entry, sentence):
    assert entries.entry_problem(entry) == sentence


def test_normalise_trims():
    assert entries.normalise("  \n a fact \n\t") == "a fact"


@pytest.mark.parametrize(
    ("items", "duplicate"),
    [([], None), (["a", "b"], None), (["a", "b", "a"], "a"), (["x", "x"], "x")],
)
def test_first_duplicate(items, duplicate):
    assert entries.first_duplicate(items) == duplicate


COMPOSED = "Owner lives in H\u00e0 N\u1ed9i, near H\u1ed3 G\u01b0\u01a1m."
DECOMPOSED = unicodedata.normalize("NFD", COMPOSED)


def test_the_two_normal_forms_of_an_entry_are_one_entry_held_as_written():
    assert DECOMPOSED != COMPOSED
    assert entries.first_duplicate([COMPOSED, "b", DECOMPOSED]) == DECOMPOSED
    assert entries.first_duplicate([DECOMPOSED, COMPOSED]) == COMPOSED
    assert entries.find(["a", COMPOSED], DECOMPOSED) == COMPOSED  # the form the file holds
    assert entries.find([DECOMPOSED], COMPOSED) == DECOMPOSED
    assert entries.find([COMPOSED], "Owner lives in Hanoi.") is None


@pytest.mark.parametrize(
    ("n", "text"), [(0, "0"), (999, "999"), (1_474, "1,474"), (2_200, "2,200")]
)
def test_count_has_thousands_separators(n, text):
    assert entries.count(n) == text
