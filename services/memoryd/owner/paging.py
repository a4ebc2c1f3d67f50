"""Pages: no owner answer may exceed one frame (MAX_FRAME, 1 MiB).

A long answer is cut into pages of at most PAGE_BYTES of UTF-8 text, and one item (a log line, a
pending edit) into at most ITEM_BYTES; whatever is cut says so, and a page that does not hold
everything says how many there are and the command that shows the rest. Pure functions.
"""

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from proto.frames import MAX_FRAME

PAGE_BYTES = 512 * 1024
ITEM_BYTES = 16 * 1024
REPLY_MAX = MAX_FRAME - 64 * 1024  # a last guard in dispatch: room for the frame's own bytes
T = TypeVar("T")


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def cut_text(text: str, limit: int = ITEM_BYTES) -> tuple[str, bool]:
    """text at most limit bytes of UTF-8, with a marker saying how much was cut; and whether."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, False
    kept = data[: limit - 80].decode("utf-8", errors="ignore")
    return f"{kept}… (cut: {len(text) - len(kept):,} more characters)", True


@dataclass(frozen=True)
class Page:
    shown: list  # rendered items (str for text, dict for JSON)
    total: int
    cut: int  # how many items were cut to ITEM_BYTES

    @property
    def complete(self) -> bool:
        return len(self.shown) == self.total


def text_page(items: Sequence[T], render: Callable[[T], str], budget: int = PAGE_BYTES) -> Page:
    """As many items as fit in budget bytes (at least one), each rendered and cut to ITEM_BYTES."""
    shown: list[str] = []
    used = cut = 0
    for item in items:
        text, was_cut = cut_text(render(item))
        size = utf8_len(text) + 1
        if shown and used + size > budget:
            break
        shown.append(text)
        used += size
        cut += was_cut
    return Page(shown, len(items), cut)


def json_page(items: Sequence[T], to_dict: Callable[[T], dict], budget: int = PAGE_BYTES) -> Page:
    """The same for JSON: each item's object whole if its JSON is at most ITEM_BYTES, else with
    its long strings cut (and "cut": true)."""
    shown: list[dict] = []
    used = cut = 0
    for item in items:
        value = to_dict(item)
        if utf8_len(dumps(value)) > ITEM_BYTES:
            value = {**_cut_strings(value, ITEM_BYTES // 8), "cut": True}
            cut += 1
        size = utf8_len(dumps(value)) + 2
        if shown and used + size > budget:
            break
        shown.append(value)
        used += size
    return Page(shown, len(items), cut)


def _cut_strings(value, limit: int):
    if isinstance(value, str):
        return cut_text(value, limit)[0]
    if isinstance(value, list):
        kept = [_cut_strings(v, limit) for v in value[:32]]
        return kept + ([f"… ({len(value) - 32:,} more)"] if len(value) > 32 else [])
    if isinstance(value, dict):
        return {k: _cut_strings(v, limit) for k, v in value.items()}
    return value


# A lone surrogate: how Python holds a byte of a path that is not UTF-8 (a home in a folder named
# in Latin-1); no UTF-8 frame can carry one as it is.
_SURROGATE = re.compile("[\ud800-\udfff]")


def dumps(value) -> str:
    """value as JSON; a lone surrogate is written as JSON's escape, which reads back as the same
    character, so bxctl gets back the very path memoryd named."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def sendable(text: str) -> str:
    """text with each byte a path held that is not UTF-8 shown as \\xNN: plain text the owner
    reads, which a frame of UTF-8 can carry."""
    if not _SURROGATE.search(text):
        return text
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no byte of a path makes
        raw = text.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "backslashreplace")


def bounded(text: str) -> str:
    """The last guard: an answer that would not fit a frame becomes a short sentence saying so."""
    size = utf8_len(text)
    if size <= REPLY_MAX:
        return text
    return f"the answer is {size:,} bytes, over the {REPLY_MAX:,} one reply may hold; it was cut"
