"""Names, ids and times are read with ASCII digits only.

Python's `\\d` matches every script's digits ("２０２６", "٢٠٢٦"), and int() reads them, so a
pattern written with it takes an edit id, a month file, a note number or a time that memoryd never
writes: an id of fullwidth digits names a journal file of fullwidth digits, and two spellings of one
number name one note. Every pattern under services/ and libs/ says [0-9]; `\\d` stays only inside a
class that excludes digits from a word ([^\\W\\d_]: any script's digits are no letter) and where
a wider match is the safer side (the exceptions below, each with its reason).
"""

import ast
import re
from pathlib import Path

import pytest

from memoryd.data import archive, backup, exportfiles, layout
from memoryd.journal import idform
from proto import messages

ROOT = Path(__file__).resolve().parent.parent

# (file, pattern): where matching more than ASCII digits is the safer side.
WIDER_ON_PURPOSE = {
    # A line that looks like a hit header "[N]" to a reader is escaped: any digits look like N.
    ("services/memoryd/search/defuse.py", r"\[\d+\]"),
}

# \d outside a character class ([...] with its escapes and a leading ] or ^]).
_OUTSIDE_CLASS = re.compile(r"\\\\|\[(?:\^?\]?)(?:\\.|[^\]\\])*\]|(\\d)")


def _digit_escapes_outside_classes(pattern: str) -> bool:
    return any(m[1] for m in _OUTSIDE_CLASS.finditer(pattern))


def _string_constants():
    for folder in ("services", "libs"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    yield str(path.relative_to(ROOT)), node.lineno, node.value


def test_no_pattern_reads_digits_of_other_scripts():
    found = [
        f"{name}:{line}: {value!r}"
        for name, line, value in _string_constants()
        if _digit_escapes_outside_classes(value) and (name, value) not in WIDER_ON_PURPOSE
    ]
    assert found == []


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        (r"\d{4}", "2026"),  # caught, so the check can fail
        (r"x\d", "x1"),
    ],
)
def test_the_check_sees_a_digit_escape(pattern, text):
    assert re.fullmatch(pattern, text) and _digit_escapes_outside_classes(pattern)


@pytest.mark.parametrize("pattern", [r"[^\W\d_]+", r"[\d]", r"a\\d", r"[0-9]{4}"])
def test_the_check_leaves_classes_and_escaped_backslashes(pattern):
    assert not _digit_escapes_outside_classes(pattern)


FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")
ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


@pytest.mark.parametrize("digits", [FULLWIDTH, ARABIC_INDIC])
@pytest.mark.parametrize(
    ("pattern", "ascii_text"),
    [
        (re.compile(messages.EDIT_ID_PATTERN), "2026-12-04-0001"),
        (re.compile(messages.PENDING_ID_PATTERN), "p-2026-12-04-0001"),
        (idform.EDIT_ID, "2026-12-04-0001"),
        (layout.MEMBER, "memory/edits/2026-12.jsonl"),
        (backup.ARCHIVE_NAME, "memory-20261204T000000Z.tar.gz"),
        (exportfiles.EXPORT_NAME, "export-20261204T000000Z.jsonl"),
        (archive.CREATED, "2026-12-04T00:00:00Z"),
    ],
)
def test_ids_names_and_times_take_ascii_digits_only(digits, pattern, ascii_text):
    assert pattern.fullmatch(ascii_text)
    assert not pattern.fullmatch(ascii_text.translate(digits))
