"""Where a joiner or a variation selector is ordinary writing, and so shown as written.

escape() shows every invisible code point as an escape, so that nothing hidden passes unseen. But
three of them are part of how some languages and emoji are written, and an escape there tells the
reader something else than the owner wrote: Persian puts a ZERO WIDTH NON-JOINER (U+200C) inside
most plurals and verbs (کتاب‌ها), Indic scripts a ZWJ or ZWNJ after a virama to choose a conjunct's
form, an emoji sequence a ZERO WIDTH JOINER (U+200D) between two emoji (👨‍👩‍👧), and ❤️ is U+2764
followed by VARIATION SELECTOR-16. joins() says when one stands where that writing puts it:

- ZWNJ or ZWJ between two letters of a joining script (Arabic, Syriac, N'Ko, Mongolian ... and
  their marks between), or right after a virama that follows a letter and before a letter: the
  contexts IDNA's CONTEXTJ rules (RFC 5892, A.1 and A.2) allow;
- ZWJ between two Extended_Pictographic characters (a skin tone or VS16 may close the first);
- VS15 or VS16 right after an Extended_Pictographic character, or after a keycap's digit, # or *
  when the keycap mark U+20E3 follows.

Anywhere else (at a word's edge, in a run, next to a digit or a bracket) they are still escaped,
and recall's defence against forged headers reads every line with them taken out either way.
Every neighbour that decides is itself shown as written, so the escaped text read again gives the
same answer for each joiner it kept.
"""

import unicodedata

from proto.graphic import is_not_graphic, within
from proto.invisible import is_invisible

ZWNJ, ZWJ, VS15, VS16 = "\u200c", "\u200d", "\ufe0e", "\ufe0f"
KEYCAP = "\u20e3"
KEYCAP_BASES = frozenset("0123456789#*")
VIRAMA = 9  # the canonical combining class of a virama
MARKS_SKIPPED = 8  # marks between a letter and its joiner, as vowel signs and shadda stand

# The blocks of the scripts whose letters join (Joining_Type D, L or R in ArabicShaping.txt).
JOINING_SCRIPTS: tuple[tuple[int, int], ...] = (
    (0x0600, 0x06FF),  # Arabic
    (0x0700, 0x074F),  # Syriac
    (0x0750, 0x077F),  # Arabic Supplement
    (0x07C0, 0x07FF),  # N'Ko
    (0x0840, 0x085F),  # Mandaic
    (0x0860, 0x086F),  # Syriac Supplement
    (0x0870, 0x08FF),  # Arabic Extended-B and -A
    (0x1800, 0x18AF),  # Mongolian
    (0xA840, 0xA87F),  # Phags-pa
    (0xFB50, 0xFDFF),  # Arabic Presentation Forms-A
    (0xFE70, 0xFEFF),  # Arabic Presentation Forms-B
    (0x10AC0, 0x10AFF),  # Manichaean
    (0x10B80, 0x10BAF),  # Psalter Pahlavi
    (0x10D00, 0x10D3F),  # Hanifi Rohingya
    (0x10EC0, 0x10EFF),  # Arabic Extended-C
    (0x10F30, 0x10FDF),  # Sogdian, Old Uyghur, Chorasmian
    (0x1E900, 0x1E95F),  # Adlam
)

# Extended_Pictographic of emoji-data.txt (UTS #51), as inclusive ranges: the emoji and the
# code points Unicode keeps for future ones, which the emoji ZWJ sequences are made of.
PICTOGRAPHIC: tuple[tuple[int, int], ...] = (
    (0x00A9, 0x00A9),
    (0x00AE, 0x00AE),
    (0x203C, 0x203C),
    (0x2049, 0x2049),
    (0x2122, 0x2122),
    (0x2139, 0x2139),
    (0x2194, 0x2199),
    (0x21A9, 0x21AA),
    (0x231A, 0x231B),
    (0x2328, 0x2328),
    (0x2388, 0x2388),
    (0x23CF, 0x23CF),
    (0x23E9, 0x23F3),
    (0x23F8, 0x23FA),
    (0x24C2, 0x24C2),
    (0x25AA, 0x25AB),
    (0x25B6, 0x25B6),
    (0x25C0, 0x25C0),
    (0x25FB, 0x25FE),
    (0x2600, 0x2605),
    (0x2607, 0x2612),
    (0x2614, 0x2685),
    (0x2690, 0x2705),
    (0x2708, 0x2712),
    (0x2714, 0x2714),
    (0x2716, 0x2716),
    (0x271D, 0x271D),
    (0x2721, 0x2721),
    (0x2728, 0x2728),
    (0x2733, 0x2734),
    (0x2744, 0x2744),
    (0x2747, 0x2747),
    (0x274C, 0x274C),
    (0x274E, 0x274E),
    (0x2753, 0x2755),
    (0x2757, 0x2757),
    (0x2763, 0x2767),
    (0x2795, 0x2797),
    (0x27A1, 0x27A1),
    (0x27B0, 0x27B0),
    (0x27BF, 0x27BF),
    (0x2934, 0x2935),
    (0x2B05, 0x2B07),
    (0x2B1B, 0x2B1C),
    (0x2B50, 0x2B50),
    (0x2B55, 0x2B55),
    (0x3030, 0x3030),
    (0x303D, 0x303D),
    (0x3297, 0x3297),
    (0x3299, 0x3299),
    (0x1F000, 0x1F0FF),
    (0x1F10D, 0x1F10F),
    (0x1F12F, 0x1F12F),
    (0x1F16C, 0x1F171),
    (0x1F17E, 0x1F17F),
    (0x1F18E, 0x1F18E),
    (0x1F191, 0x1F19A),
    (0x1F1AD, 0x1F1E5),
    (0x1F201, 0x1F20F),
    (0x1F21A, 0x1F21A),
    (0x1F22F, 0x1F22F),
    (0x1F232, 0x1F23A),
    (0x1F23C, 0x1F23F),
    (0x1F249, 0x1F3FA),
    (0x1F400, 0x1F53D),
    (0x1F546, 0x1F64F),
    (0x1F680, 0x1F6FF),
    (0x1F774, 0x1F77F),
    (0x1F7D5, 0x1F7FF),
    (0x1F80C, 0x1F80F),
    (0x1F848, 0x1F84F),
    (0x1F85A, 0x1F85F),
    (0x1F888, 0x1F88F),
    (0x1F8AE, 0x1F8FF),
    (0x1F90C, 0x1F93A),
    (0x1F93C, 0x1F945),
    (0x1F947, 0x1FAFF),
    (0x1FC00, 0x1FFFD),
)
SKIN_TONES = (0x1F3FB, 0x1F3FF)  # the emoji modifiers, which close the emoji before them

_JOINING_STARTS = [first for first, _ in JOINING_SCRIPTS]
_PICTOGRAPHIC_STARTS = [first for first, _ in PICTOGRAPHIC]


def is_pictographic(ch: str) -> bool:
    """An emoji: Extended_Pictographic and assigned (a code point kept for a future emoji is
    shown as an escape, which joins nothing)."""
    cp = ord(ch)
    return within(PICTOGRAPHIC, _PICTOGRAPHIC_STARTS, cp) and not is_not_graphic(cp)


def _letter(ch: str) -> bool:
    return unicodedata.category(ch).startswith("L")


def _joining_letter(ch: str) -> bool:
    return _letter(ch) and within(JOINING_SCRIPTS, _JOINING_STARTS, ord(ch))


def _mark(ch: str) -> bool:
    """A mark shown as written: an invisible one (a variation selector, U+034F) is escaped, and
    an escape between a letter and its joiner leaves the joiner at a word's edge."""
    return unicodedata.category(ch) == "Mn" and not is_invisible(ord(ch))


def _past_marks(text: str, at: int, step: int) -> str:
    """The first character from at on (step -1: backwards) that is no mark, or ""."""
    for _ in range(MARKS_SKIPPED + 1):
        if not 0 <= at < len(text):
            return ""
        if not _mark(text[at]):
            return text[at]
        at += step
    return ""


def _emoji_before(text: str, at: int) -> bool:
    """Whether an emoji ends at text[at], a skin tone or VS16 closing it or not."""
    if at >= 0 and text[at] == VS16:
        at -= 1
    if at >= 0 and SKIN_TONES[0] <= ord(text[at]) <= SKIN_TONES[1]:
        at -= 1
    return at >= 0 and is_pictographic(text[at])


def joins(text: str, i: int) -> bool:
    """True when text[i] is a ZWNJ, ZWJ, VS15 or VS16 standing where writing puts one."""
    ch = text[i]
    after = text[i + 1] if i + 1 < len(text) else ""
    if ch in (VS15, VS16):
        if i == 0:
            return False
        before = text[i - 1]
        return is_pictographic(before) or (before in KEYCAP_BASES and after == KEYCAP)
    if ch not in (ZWNJ, ZWJ) or not after or i == 0:
        return False
    if ch == ZWJ and is_pictographic(after) and _emoji_before(text, i - 1):
        return True
    if (
        i >= 2
        and unicodedata.combining(text[i - 1]) == VIRAMA
        and _letter(text[i - 2])
        and _letter(after)
    ):
        return True
    before, next_letter = _past_marks(text, i - 1, -1), _past_marks(text, i + 1, 1)
    return bool(before and next_letter) and _joining_letter(before) and _joining_letter(next_letter)
