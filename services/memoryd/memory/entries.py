"""The entries of memory.md and user.md: texts separated by a line holding only § (spec 3).

The file's text is the entries joined by "\\n§\\n". memoryd writes that text followed by one final
newline; the limit is counted with len() on the text without that final newline, so an empty file is
"" and counts 0. The owner may edit the files by hand, so parsing is tolerant: a UTF-8 byte order
mark is read as if absent and CRLF or a lone CR as a line end (as notes.md is read), a line holding
only § with spaces around it is a separator too, and separators at the start or end, or two in a
row, give no empty entry. Each entry is trimmed. For a hand-edited file the count is that of its
entries as memoryd would write them.

An entry is trimmed, not empty, holds no line that is only §, and no two entries of a file are
identical; entry_problem() says which rule a new text breaks. Identical means canonically equal
(canonical()): the same text in its composed and decomposed Unicode forms is one entry to every
reader, so it is one entry here too, while the file keeps the form the owner or the agent wrote.
Invalid UTF-8 is not guessed at: the file is damaged (FileDamaged) and the owner has to fix it, as
is a file far over anything memoryd writes (TooLarge, over MAX_BYTES: memfiles.read_text does not
even read one, and every reader of held bytes, an export's or a backup's, refuses it by the same
rule).
"""

import unicodedata

from memoryd.errors import FileDamaged
from proto.escape import escape
from proto.trim import WHITE_SPACE, trim

SEPARATOR = "§"
JOINER = "\n" + SEPARATOR + "\n"
BOM = "\ufeff"

LIMITS: dict[str, int] = {"soul.md": 4_000, "memory.md": 2_200, "user.md": 1_375}
FILE_OF_ARG: dict[str, str] = {"memory": "memory.md", "user": "user.md"}

EMPTY_ENTRY = "refused: the entry is empty"
SEPARATOR_LINE = "refused: the entry contains a line holding only §, which separates entries"


def is_separator(line: str) -> bool:
    return trim(line) == SEPARATOR


# No edit of memoryd's comes near this (memory.md holds at most 2,200 characters, a few KiB even
# in four-byte characters), while reading a file up to it costs nothing.
MAX_BYTES = 1_048_576


class TooLarge(FileDamaged):
    """A memory file far over anything memoryd writes (a wrong file saved over it, a runaway
    script): refused, named with its size, and never parsed or journalled."""

    def __init__(self, name: str, size: int):
        super().__init__(
            f"{name} is {size:,} bytes, far over what memoryd reads of it ({MAX_BYTES:,} bytes): "
            "it is not read or journalled until it is made smaller"
        )
        self.size = size


def decode(data: bytes, name: str) -> str:
    """A memory file's bytes as text: BOM dropped, CRLF and CR read as LF; FileDamaged if not UTF-8,
    TooLarge if over MAX_BYTES."""
    if len(data) > MAX_BYTES:
        raise TooLarge(name, len(data))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FileDamaged(f"{name} is not valid UTF-8 (byte {e.start})") from None
    return as_saved(text)


def as_saved(text: str) -> str:
    """Text the owner saved in an editor, read as memoryd reads a hand-edited file: a leading
    byte order mark dropped, CRLF and a lone CR (an editor set to classic Mac line ends) read as LF.
    A CR is never part of an entry (rule 1 refuses it in every write), so reading it as a line end
    loses nothing. The file itself and bxctl memory edit's copy go through this one function, so
    the same bytes give the same entries wherever they are saved."""
    if text.startswith(BOM):
        text = text[len(BOM) :]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def parse(text: str) -> list[str]:
    """The entries of a file's text, in order, each trimmed; empty ones are skipped."""
    entries: list[str] = []
    lines: list[str] = []

    def close() -> None:
        entry = trim("\n".join(lines))
        if entry:
            entries.append(entry)
        lines.clear()

    for line in text.split("\n"):
        if is_separator(line):
            close()
        else:
            lines.append(line)
    close()
    return entries


def render(entries: list[str] | tuple[str, ...]) -> str:
    """The file's text: what counts against the limit."""
    return JOINER.join(entries)


def length(entries: list[str] | tuple[str, ...]) -> int:
    return len(render(entries))


def file_bytes(entries: list[str] | tuple[str, ...]) -> bytes:
    """What memoryd writes: the text and a final newline, or nothing for no entries."""
    if not entries:
        return b""
    return (render(entries) + "\n").encode("utf-8")


def normalise(text: str) -> str:
    """A new entry as it will be stored: trimmed (of White_Space only, so a control character at
    an edge stays for the check to refuse)."""
    return trim(text)


def entry_problem(entry: str) -> str | None:
    """The refusal sentence for a (trimmed) entry that breaks an entry rule, or None."""
    if not entry:
        return EMPTY_ENTRY
    if any(is_separator(line) for line in entry.split("\n")):
        return SEPARATOR_LINE
    return None


def canonical(text: str) -> str:
    """text as entries are compared (NFC): the composed and decomposed forms of one text (a word
    typed on one keyboard, copied from a macOS file name or a PDF on another) are the same text by
    Unicode's definition, and look the same in the prompt. Only comparisons use it; what is stored
    stays as written."""
    return unicodedata.normalize("NFC", text)


def find(entries: list[str] | tuple[str, ...], text: str) -> str | None:
    """The entry canonically equal to text, as the file holds it, or None."""
    key = canonical(text)
    return next((entry for entry in entries if canonical(entry) == key), None)


def first_duplicate(entries: list[str] | tuple[str, ...]) -> str | None:
    """The first entry that appears twice (canonically), or None."""
    seen: set[str] = set()
    for entry in entries:
        key = canonical(entry)
        if key in seen:
            return entry
        seen.add(key)
    return None


def count(n: int) -> str:
    """A number as the spec's sentences write it: 2,200."""
    return f"{n:,}"


def shorten(text: str, limit: int = 80) -> str:
    """An entry shortened to quote it in a sentence."""
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


def visible(text: str, limit: int = 80) -> str:
    """A text quoted with its white space and escapes visible (\\n, \\t, \\u{A0}), cut to limit
    characters of the text: how an old that matched nothing is shown, where shorten()'s joining of
    white space would hide the very difference that made it fail."""
    long = len(text) > limit
    out = []
    for ch in text[: limit - 1] if long else text:
        if ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch in WHITE_SPACE and ch != " ":
            out.append(f"\\u{{{ord(ch):04X}}}" if ord(ch) >= 0x80 else f"\\x{ord(ch):02x}")
        else:
            out.append(escape(ch, markup=False))
    return "".join(out) + ("…" if long else "")
