"""The check (spec 5): four fixed rules every new or rewritten entry, and every note, must pass.

It runs on write, and again on every entry of memory.md and user.md as the memory block is built,
since the owner can edit the files by hand. Each rule refuses with its own fixed sentence naming
the rule. The list is short and fixed on purpose: defence in depth. The real defence is that a
session which has read untrusted content can only write notes.

Rule 3's tags are written out nowhere else in the project, and here only built from pieces: a model
reading the literal tags could take them for its own. Everyone else imports TEMPLATE_TAGS.
"""

import re

from memoryd.errors import CheckFailed
from proto.invisible import first_invisible

RULE_1 = "refused: the text contains a control character (rule 1)"
RULE_2 = "refused: the text contains an invisible or direction-changing character (rule 2)"
RULE_3 = "refused: the text contains chat-template markup (rule 3)"
RULE_4 = "refused: the text contains a phrase that reads as an instruction to the model (rule 4)"

_LT, _GT, _BAR, _SLASH = "<", ">", "|", "/"
TEMPLATE_MARKERS: tuple[str, ...] = (_LT + _BAR, _BAR + _GT)
# DeepSeek's templates write their markup with the fullwidth vertical line U+FF5C
# ("<" + U+FF5C + "end▁of▁sentence" + U+FF5C + ">"): a vertical bar to a model trained on them.
_FULLWIDTH_BAR = "\uff5c"
FULLWIDTH_MARKERS: tuple[str, ...] = (_LT + _FULLWIDTH_BAR, _FULLWIDTH_BAR + _GT)
_TAG_NAMES = ("th" + "ink", "tool" + "_" + "call")
TEMPLATE_TAGS: tuple[str, ...] = tuple(
    _LT + closing + name + _GT for name in _TAG_NAMES for closing in ("", _SLASH)
)

INSTRUCTION_PHRASES: tuple[str, ...] = (
    "ignore previous instructions",
    "ignore all previous",
    "disregard previous instructions",
    "disregard all previous",
    "new instructions:",
    "system prompt:",
)

_WHITESPACE_RUN = re.compile(r"\s+")


def is_control(cp: int) -> bool:
    """C0 but newline and tab, DEL, and C1."""
    if cp in (0x0A, 0x09):
        return False
    return cp < 0x20 or 0x7F <= cp <= 0x9F


def has_control(text: str) -> bool:
    return any(is_control(ord(ch)) for ch in text)


def has_invisible(text: str) -> bool:
    return first_invisible(text) is not None


def has_template_markup(text: str) -> bool:
    folded = text.casefold()
    return any(marker in folded for marker in TEMPLATE_MARKERS + FULLWIDTH_MARKERS + TEMPLATE_TAGS)


def normalise_phrase_text(text: str) -> str:
    """Runs of whitespace collapsed to one space, case folded: what rule 4 searches.

    Full case folding turns the capital dotted I (U+0130, Turkish and Azeri) into "i" and a
    combining dot above, so "İGNORE PREVIOUS İNSTRUCTIONS" would not read as the phrase it is
    in any case but its dot: the dot is dropped after folding."""
    return _WHITESPACE_RUN.sub(" ", text).casefold().replace("i\u0307", "i")


def has_instruction_phrase(text: str) -> bool:
    folded = normalise_phrase_text(text)
    return any(phrase in folded for phrase in INSTRUCTION_PHRASES)


_RULES = (
    (has_control, RULE_1),
    (has_invisible, RULE_2),
    (has_template_markup, RULE_3),
    (has_instruction_phrase, RULE_4),
)


def problem(text: str) -> str | None:
    """The sentence of the first rule text breaks, or None when it passes."""
    for breaks, sentence in _RULES:
        if breaks(text):
            return sentence
    return None


def check(text: str) -> None:
    """Raise CheckFailed with the rule's sentence when text breaks a rule."""
    sentence = problem(text)
    if sentence is not None:
        raise CheckFailed(sentence)
