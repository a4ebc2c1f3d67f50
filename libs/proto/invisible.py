"""Invisible and direction-changing code points, fixed from Unicode 16 data.

DEFAULT_IGNORABLE is the Default_Ignorable_Code_Point property of DerivedCoreProperties-16.0.0.txt,
as inclusive ranges. EXTRA_INVISIBLE are code points that render as nothing without being in that
property or in category Cf (spec 5, the check, rule 2). A test rebuilds the table from the
official file and compares. Both the check (memoryd) and escape() use this one table.
"""

import bisect

DEFAULT_IGNORABLE: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180D),
    (0x180E, 0x180E),
    (0x180F, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2065, 0x2065),
    (0x2066, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0000),
    (0xE0001, 0xE0001),
    (0xE0002, 0xE001F),
    (0xE0020, 0xE007F),
    (0xE0080, 0xE00FF),
    (0xE0100, 0xE01EF),
    (0xE01F0, 0xE0FFF),
)

EXTRA_INVISIBLE: frozenset[int] = frozenset({0x034F, 0x115F, 0x3164, 0x2800, 0x2028, 0x2029})

_STARTS = [a for a, _ in DEFAULT_IGNORABLE]


def is_default_ignorable(cp: int) -> bool:
    i = bisect.bisect_right(_STARTS, cp) - 1
    return i >= 0 and DEFAULT_IGNORABLE[i][0] <= cp <= DEFAULT_IGNORABLE[i][1]


def is_invisible(cp: int) -> bool:
    """True for a code point the check's rule 2 refuses."""
    return cp in EXTRA_INVISIBLE or is_default_ignorable(cp)


def first_invisible(text: str) -> int | None:
    """The first code point of text that rule 2 refuses, or None."""
    for ch in text:
        cp = ord(ch)
        if cp in EXTRA_INVISIBLE or is_default_ignorable(cp):
            return cp
    return None
