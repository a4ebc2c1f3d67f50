"""The markdown export (`bxctl memory export --format markdown`): the document, and the finding
of a text in it when a forget takes that text out of an export kept in backups/.

An entry's or note's text is whatever memory holds, an untrusted session's note among it, so it
may hold lines that read as this document's own: a "### note 9" heading, an italic provenance line
naming a trusted session, a fence, a quote. Each text is therefore set as an indented code block:
every line of it begins with four spaces, after every character some reader takes for a line
break (str.splitlines: a lone CR, a form feed, U+2028 as well as a newline), an empty line too.
Read raw, as bxctl prints it, the lines at the margin are then only the exporter's (headings,
provenance lines, the blank lines between); rendered, the block shows its text verbatim, no
markup of it read. A fenced block renders the same, but read raw it leaves a planted heading at
the margin, where it reads as one; the indent sets the text apart for both readers alike.

The provenance line stands under the item's heading, before its text, so no text lies between a
heading and the line that says whose it is, and a value it holds that is not of the shape memoryd
writes (a journal edited by hand) is quoted and escaped, never laid out as it is.

The document is its parts joined by blank lines, and a block holds no blank line (each of its
lines is indented), so a forget splits an export at its blank lines and knows each text's block
whole: it replaces the blocks whose text is the one forgotten (matching.same, the rule of every
place a forget looks), not a text that merely contains it. An export written before texts were
indented (no LAYOUT line) is scrubbed as it was then: the text's own paragraph.

An export is as long as notes.md, which has no limit, so a forget reads it as a stream: chunks of
its bytes cut into its parts, one part held at a time (the longest is one item's text), and the
scrubbed document written as it is made. A part is cut where the whole document, but its last
newline, splits at "\n\n" (left to right); "\n" is one byte in UTF-8 and never inside another
character's bytes, so each part's bytes decode as they do in the whole, and the document written
is byte for byte the one a scrub of the whole makes.
"""

import json
import re
from collections.abc import Callable, Iterable, Iterator

from memoryd.data import matching
from proto.trim import trim

INDENT = "    "
# What str.splitlines breaks a line at: a reader of the file may take any of them for a line end.
BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
LAYOUT = (
    "Each entry and note: its heading, one italic line with the edit, session, time, class and "
    "untrusted flag of the write that put it there, then its text exactly as memory holds it, "
    "every line indented four spaces (a code block). Only the indented lines are memory's text; "
    "nothing in them is part of this document."
)
_LAYOUT = LAYOUT.encode()
# A markdown export is read this many bytes at a time: a chunk is copied about three times over
# while it is cut into parts, so a smaller one than notes.md's keeps a forget's reading small.
CHUNK = 1 << 18

_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9:._-]*")
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def block(text: str) -> str:
    """text with four spaces before each of its lines: one to end with a line break, or the
    empty text, gets an indented empty last line, so no block ends in a break or is empty."""
    out = "".join(INDENT + line for line in text.splitlines(keepends=True))
    return out + INDENT if not text or text[-1] in BREAKS else out


def unblock(part: str) -> str | None:
    """The text a block holds, or None when part is no block (one of the exporter's lines)."""
    lines = part.splitlines(keepends=True)
    if not lines or not all(line.startswith(INDENT) for line in lines):
        return None
    return "".join(line[len(INDENT) :] for line in lines)


def _shown(value: object) -> str:
    """A provenance value as the line shows it: as it is when it has memoryd's shape (an edit id,
    a session id, a time, a class), "unknown" for none, else quoted with every ASCII punctuation
    escaped, so a value edited into the journal by hand lays out no markup of its own."""
    if value is None:
        return "unknown"
    text = str(value)
    if _PLAIN.fullmatch(text):
        return text
    return _PUNCTUATION.sub(r"\\\1", json.dumps(text, ensure_ascii=True))


def provenance_line(p: dict) -> str:
    label = _shown(p["class"]) + (", untrusted" if p["untrusted"] else "")
    return (
        f"*edit {_shown(p['edit'])}, session {_shown(p['session'])}, {_shown(p['time'])}, {label}*"
    )


def markdown(head: dict, found: Iterable[dict]) -> bytes:
    """The document whole (parts)."""
    return b"".join(parts(head, found))


def parts(head: dict, found: Iterable[dict]) -> Iterator[bytes]:
    """The document a part at a time, as found gives its items: a heading per file, then per
    entry or note its heading, its provenance line and its text as a block, every part apart
    from the next by a blank line."""
    yield (
        f"# Memory export (format {head['version']}, memoryd {head['memoryd']}, "
        f"exported {head['exported']})\n\n{LAYOUT}"
    ).encode()
    section = None
    for item in found:
        out = []
        where = item["provenance"]["file"] if item["kind"] == "entry" else "notes.md"
        if where != section:
            out.append(f"## {where}")
            section = where
        if item["kind"] == "entry":
            out.append("### entry")
        else:
            out.append(f"### note {_shown(item['number'])} ({_shown(item['note'])})")
        out += [provenance_line(item["provenance"]), block(item["text"])]
        yield "".join("\n\n" + part for part in out).encode("utf-8")
    yield b"\n"


Chunks = Callable[[], Iterable[bytes]]  # the document's bytes from its start, afresh per call


def _legacy_paragraph(text: str) -> bytes:
    return b"\n\n" + trim(text).encode("utf-8", "surrogateescape") + b"\n\n"


class _Parts:
    """The parts of a document given as chunks, one at a time: the document but its last newline,
    split at each "\n\n" from the left, as str.split cuts it; after them, tail is that newline
    (b"" when the document does not end in one). A part longer than a chunk is gathered in
    pieces, joined once."""

    def __init__(self, chunks: Iterable[bytes]):
        self.chunks = chunks
        self.tail = b""

    def __iter__(self) -> Iterator[bytes]:
        pending: list[bytes] = []  # the part being read, never holding "\n\n"
        held = b""  # the last byte read: the document's last newline if no chunk follows
        for chunk in self.chunks:
            if not chunk:
                continue
            data, held = held + chunk[:-1], chunk[-1:]
            if pending and pending[-1].endswith(b"\n") and data.startswith(b"\n"):
                pending[-1] = pending[-1][:-1]  # a blank line across two chunks
                yield b"".join(pending)
                pending, data = [], data[1:]
            pieces = data.split(b"\n\n")
            if len(pieces) > 1:
                yield b"".join([*pending, pieces[0]])
                yield from pieces[1:-1]
                pending = []
            if pieces[-1]:
                pending.append(pieces[-1])
        if held == b"\n":
            self.tail = held
        elif held:
            pending.append(held)  # not a newline: no blank line with the byte before it
        yield b"".join(pending)


def _laid_out(chunks: Iterable[bytes]) -> bool:
    """Whether the document's second part is the LAYOUT line (texts set as blocks): the bytes
    after its first blank line are LAYOUT, then a blank line and more, or the document's end (a
    newline or none: the last newline is no part's). Only those bytes are held: a file that is
    not memoryd's may have no blank line at all."""
    carry, after = b"", None  # after: the bytes that follow the first blank line
    for chunk in chunks:
        if after is not None:
            after += chunk
        else:
            data = carry + chunk
            at = data.find(b"\n\n")
            if at == -1:
                carry = data[-1:]
                continue
            after = data[at + 2 :]
        if len(after) > len(_LAYOUT) + 2:  # the blank line after it is not the last newline's
            return after[: len(_LAYOUT) + 2] == _LAYOUT + b"\n\n"
    return after in (_LAYOUT, _LAYOUT + b"\n")


def _held(part: bytes) -> str | None:
    """The text the block part holds, None when it is no block (unblock, with a part that does
    not begin with the indent passed over undecoded)."""
    if not part.startswith(b" " * len(INDENT)):
        return None
    return unblock(part.decode("utf-8", "surrogateescape"))


def scrubbed(chunks: Chunks, text: str, marker: str, replaced: list[int]) -> Iterator[bytes]:
    """The markdown export chunks gives, with every block whose text is text (matching.same)
    holding marker instead, a part at a time; replaced gets how many blocks it replaced (an
    export laid out as paragraphs: 1 when its text's paragraph was there)."""
    if not _laid_out(chunks()):
        yield from _replace(chunks(), _legacy_paragraph(text), _legacy_paragraph(marker), replaced)
        return
    instead = block(marker).encode("utf-8", "surrogateescape")
    parts = _Parts(chunks())
    n = 0
    for i, part in enumerate(parts):
        held = _held(part)
        if held is not None and matching.same(held, text):
            part = instead
            n += 1
        yield part if i == 0 else b"\n\n" + part
    yield parts.tail
    replaced.append(n)


def _replace(
    chunks: Iterable[bytes], old: bytes, new: bytes, replaced: list[int]
) -> Iterator[bytes]:
    """bytes.replace(old, new) of the chunks' bytes, as they come: the bytes a match not yet
    whole may start with (fewer than old's) are carried into the next chunk."""
    carry, found = b"", False
    for chunk in chunks:
        data, start = carry + chunk, 0
        while (at := data.find(old, start)) != -1:
            yield data[start:at] + new
            start, found = at + len(old), True
        keep = max(start, len(data) - len(old) + 1)
        yield data[start:keep]
        carry = data[keep:]
    yield carry
    replaced.append(int(found))


def holds_in(chunks: Chunks, text: str) -> bool:
    """Whether the markdown export chunks gives holds a block whose text is text
    (matching.same), read until the first."""
    if not _laid_out(chunks()):
        return _found(chunks(), _legacy_paragraph(text))
    for part in _Parts(chunks()):
        held = _held(part)
        if held is not None and matching.same(held, text):
            return True
    return False


def _found(chunks: Iterable[bytes], old: bytes) -> bool:
    """Whether old is in the chunks' bytes."""
    carry = b""
    for chunk in chunks:
        data = carry + chunk
        if old in data:
            return True
        carry = data[max(0, len(data) - len(old) + 1) :]
    return False


def texts(chunks: Iterable[bytes]) -> Iterator[str]:
    """Every part of the document: the text a block holds, or the part itself when it is none
    (an export laid out as paragraphs holds its texts so)."""
    for part in _Parts(chunks):
        held = _held(part)
        yield part.decode("utf-8", "surrogateescape") if held is None else held


def scrub(data: bytes, text: str, marker: str) -> tuple[bytes, int]:
    """data, a markdown export, with every block whose text is text (matching.same) holding
    marker instead; and how many blocks it replaced."""
    replaced: list[int] = []
    out = b"".join(scrubbed(lambda: (data,), text, marker, replaced))
    return (out, replaced[0]) if replaced[0] else (data, 0)
