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
