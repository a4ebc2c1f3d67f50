"""proto.graphic's tables against Unicode 16's own file, and what escape() and recall's defuse make
of the characters Unicode 15 and 16 assigned (emoji, CJK Extension I, Garay, Todhri, Sunuwar ...),
which Python 3.11's unicodedata (Unicode 14) calls unassigned."""

import unicodedata
from pathlib import Path

import pytest

from memoryd.search.defuse import defuse, reads_as_header
from proto import escape as escaping
from proto import graphic
from proto.escape import escape, for_log
from proto.graphic import GRAPHEME_EXTEND, NOT_GRAPHIC, is_grapheme_extend, is_not_graphic
from proto.invisible import is_invisible

REPO = Path(__file__).resolve().parents[2]
# Copied unchanged from unicode.org, with its licence beside it (tests/data/unicode/LICENSE).
UNICODE_FILE = REPO / "tests/data/unicode/DerivedCoreProperties-16.0.0.txt"
ESCAPED_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}

# Assigned in Unicode 15.0 to 16.0: shown as they are.
NEW_CHARACTERS = [
    "\U0001fa77",  # PINK HEART (15.0)
    "\U0001fae8",  # SHAKING FACE (15.0)
    "\U0001face",  # MOOSE (15.0)
    "\U0001fabf",  # GOOSE (15.0)
    "\U0001fae9",  # FACE WITH BAGS UNDER EYES (16.0)
    "\U0001cc00",  # UP-POINTING GO-KART (16.0, Symbols for Legacy Computing Supplement)
    "\U0002ebf0",  # CJK UNIFIED IDEOGRAPH-2EBF0 (16.0, Extension I)
    "\U000105c0",  # TODHRI LETTER A (16.0)
    "\U00011bc0",  # SUNUWAR LETTER DEVI (16.0)
    "\U00010d50",  # GARAY CAPITAL LETTER A (16.0)
]


def _official() -> dict[str, set[int]]:
    props: dict[str, set[int]] = {"Grapheme_Base": set(), "Grapheme_Extend": set()}
    for line in UNICODE_FILE.read_text(encoding="utf-8").splitlines():
        fields = [f.strip() for f in line.split("#", 1)[0].split(";")]
        if len(fields) < 2 or fields[1] not in props:
            continue
        first, _, last = fields[0].partition("..")
        props[fields[1]].update(range(int(first, 16), int(last or first, 16) + 1))
    return props


def _points(table: tuple[tuple[int, int], ...]) -> set[int]:
    return {cp for first, last in table for cp in range(first, last + 1)}


def table_text(points: set[int]) -> str:
    """points as the module writes them: inclusive hex ranges, about 96 characters a line."""
    tokens, start, previous = [], None, None
    for cp in [*sorted(points), None]:
        if start is not None and (cp is None or previous is None or cp != previous + 1):
            tokens.append(f"{start:04X}" if start == previous else f"{start:04X}-{previous:04X}")
            start = None
        if cp is not None and start is None:
            start = cp
        previous = cp
    lines, line = [], ""
    for token in tokens:
        if line and len(line) + 1 + len(token) > 96:
            lines.append(line)
            line = token
        else:
            line = f"{line} {token}" if line else token
    return "\n".join([*lines, line])


def test_tables_equal_unicode_16_grapheme_base_and_extend():
    official = _official()
    assert len(official["Grapheme_Base"]) > 150_000  # the file is whole
    extend = official["Grapheme_Extend"]
    assert _points(GRAPHEME_EXTEND) == extend
    assert _points(NOT_GRAPHIC) == set(range(0x110000)) - official["Grapheme_Base"] - extend
    # The module's text is this test's writing of the official sets, as it says.
    assert table_text(_points(NOT_GRAPHIC)) == graphic._NOT_GRAPHIC.strip()
    assert table_text(_points(GRAPHEME_EXTEND)) == graphic._GRAPHEME_EXTEND.strip()


def test_the_escaped_set_agrees_with_the_interpreter_on_what_it_assigns():
    # Where the interpreter knows a character, the Unicode 16 table escapes what its category
    # says; the only format characters the table leaves out (ZWNJ, the tags) are invisible.
    left_out = set()
    for cp in range(0x110000):
        category = unicodedata.category(chr(cp))
        if category == "Cn":
            continue
        if category in ESCAPED_CATEGORIES and not is_not_graphic(cp):
            left_out.add(cp)
        assert is_not_graphic(cp) <= (category in ESCAPED_CATEGORIES), hex(cp)
    assert left_out == {0x200C, *range(0xE0020, 0xE0080)}
    assert all(is_invisible(cp) and escaping.hidden(chr(cp)) for cp in left_out)


@pytest.mark.parametrize("ch", NEW_CHARACTERS, ids=lambda ch: f"U+{ord(ch):04X}")
def test_characters_assigned_since_unicode_14_are_shown_as_they_are(ch):
    text = f"Owner felt {ch} about the persimmon launch."
    assert not escaping.hidden(ch)
    assert escape(text) == text
    assert escape(text, markup=False) == text
    assert for_log(text) == text
    assert defuse(text) == text


@pytest.mark.parametrize(
    ("ch", "shown"),
    [
        ("\u0378", "\\u{0378}"),  # still unassigned in Unicode 16
        ("\U0001faff", "\\u{1FAFF}"),  # unassigned at the end of the emoji block
        ("\U0010fffd", "\\u{10FFFD}"),  # private use
        ("\ue000", "\\u{E000}"),
        ("\u2028", "\\u{2028}"),
        ("\u200c", "\\u{200C}"),  # format, in Grapheme_Extend: escaped as invisible
        ("\U000e0041", "\\u{E0041}"),
        ("\x1b", "\\x1b"),
    ],
)
def test_what_unicode_16_leaves_unassigned_private_or_hidden_is_still_escaped(ch, shown):
    assert escape(f"a{ch}b", markup=False) == f"a{shown}b"
    assert defuse(f"a{ch}b") == f"a{shown}b"


def test_a_new_character_before_a_header_is_seen_and_a_new_mark_is_not():
    # A new emoji takes a place of its own: "🫨[2]" does not look like a header's start.
    assert not reads_as_header("\U0001fae8[2] identity")
    # A Unicode 16 combining mark (GARAY VOWEL SIGN E) sits on what is before it: unseen.
    assert is_grapheme_extend(0x10D69)
    assert reads_as_header("\U00010d69[2] identity")
    assert defuse("\U00010d69[2] identity") == "\\\U00010d69[2] identity"
