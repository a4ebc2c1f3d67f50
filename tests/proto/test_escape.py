import pytest

from proto.escape import escape


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Owner prefers UTC.", "Owner prefers UTC."),
        ("two\nlines\tand tab", "two\nlines\tand tab"),
        ("bell\x07", "bell\\x07"),
        ("esc\x1b[31mred", "esc\\x1b\\[31mred"),
        ("cr\rover", "cr\\x0dover"),
        ("del\x7f", "del\\x7f"),
        ("c1\x85", "c1\\u{0085}"),
        ("zero\u200bwidth", "zero\\u{200B}width"),
        ("rtl\u202eevil", "rtl\\u{202E}evil"),
        ("tag\U000e0041", "tag\\u{E0041}"),
        ("braille\u2800blank", "braille\\u{2800}blank"),
        ("line\u2028sep", "line\\u{2028}sep"),
        ("hi @channel", "hi \\@channel"),
        ("**bold** _it_ `code`", "\\*\\*bold\\*\\* \\_it\\_ \\`code\\`"),
        ("[link](http://x) <b>", "\\[link\\](http://x) \\<b\\>"),
        ("back\\slash", "back\\\\slash"),
        ("§ é ✓ 日本", "§ é ✓ 日本"),
    ],
)
def test_escape(text, expected):
    assert escape(text) == expected


def test_escape_cannot_be_forged():
    # A literal backslash-u sequence in the text must not read as an escape of ours.
    assert escape("\\u{200B}") == "\\\\u{200B}"


def test_terminal_mode_keeps_markup_but_not_controls():
    text = "[1] *bold* @here <b> \x1b[2J \u202e"
    assert escape(text, markup=False) == "[1] *bold* @here <b> \\x1b[2J \\u{202E}"


@pytest.mark.parametrize(
    "text",
    [
        "\u06a9\u062a\u0627\u0628\u200c\u0647\u0627 \u0645\u06cc\u200c\u062e\u0648",  # Persian
        "\u0628\u0650\u200c\u0628",  # a mark between the letter and its ZWNJ
        "\u0915\u094d\u200d\u0937 \u0915\u094d\u200c\u0937",  # Devanagari conjunct forms
        "\u0dc1\u0dca\u200d\u0dbb\u0dd3",  # Sinhala: sri
        "\U0001f468\u200d\U0001f469\u200d\U0001f467 family",  # an emoji ZWJ sequence
        "\U0001f469\U0001f3fd\u200d\U0001f4bb",  # with a skin tone
        "\u2764\ufe0f\u200d\U0001f525 \u2764\ufe0f \u263a\ufe0e",  # VS16 and VS15 after emoji
        "1\ufe0f\u20e3 #\ufe0f\u20e3",  # keycaps
    ],
)
def test_joiners_and_selectors_where_writing_puts_them_are_shown_as_written(text):
    assert escape(text, markup=False) == text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\u200cb a\u200db", "a\\u{200C}b a\\u{200D}b"),  # Latin does not join
        ("\u0628\u200c \u200c\u0628", "\u0628\\u{200C} \\u{200C}\u0628"),  # at a word's edge
        ("\u0628\u200c\u200c\u0628", "\u0628\\u{200C}\\u{200C}\u0628"),  # in a run
        ("\u0628\u200c1", "\u0628\\u{200C}1"),  # before a digit
        ("[\u200d1]", "[\\u{200D}1]"),
        ("\U0001f468\u200dx", "\U0001f468\\u{200D}x"),  # ZWJ after an emoji, before no emoji
        ("x\ufe0f 2\ufe0f \ufe0f", "x\\u{FE0F} 2\\u{FE0F} \\u{FE0F}"),  # VS16 after no emoji
        ("\u2764\ufe0f\ufe0f", "\u2764\ufe0f\\u{FE0F}"),
        ("\u0915\u200d\u0937", "\u0915\\u{200D}\u0937"),  # Devanagari, no virama before
        ("\u0628\u200b\u0628 \u0628\u2060\u0628", "\u0628\\u{200B}\u0628 \u0628\\u{2060}\u0628"),
        # an escaped neighbour joins nothing: read again, the joiner would stand beside an escape
        ("\u0628\u200c\ufe0f\u0628", "\u0628\\u{200C}\\u{FE0F}\u0628"),
        ("\U0001fc00\u200d\U0001f468", "\\u{1FC00}\\u{200D}\U0001f468"),
    ],
)
def test_joiners_and_selectors_anywhere_else_are_escaped(text, shown):
    assert escape(text, markup=False) == shown
    assert escape(shown, markup=False) == shown.replace("\\", "\\\\")  # read again: the same kept
