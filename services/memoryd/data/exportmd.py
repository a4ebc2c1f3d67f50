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
"""

import json
import re
from collections.abc import Iterable, Iterator

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


def _legacy_paragraph(text: str) -> bytes:
    return b"\n\n" + trim(text).encode("utf-8", "surrogateescape") + b"\n\n"


def scrub(data: bytes, text: str, marker: str) -> tuple[bytes, int]:
    """data, a markdown export, with every block whose text is text (matching.same) holding
    marker instead; and how many blocks it replaced."""
    document = data.decode("utf-8", "surrogateescape")
    body, tail = (document[:-1], "\n") if document.endswith("\n") else (document, "")
    parts = body.split("\n\n")
    if len(parts) < 2 or parts[1] != LAYOUT:
        old = _legacy_paragraph(text)
        if old not in data:
            return data, 0
        return data.replace(old, _legacy_paragraph(marker)), 1
    n = 0
    for i, part in enumerate(parts):
        held = unblock(part)
        if held is not None and matching.same(held, text):
            parts[i] = block(marker)
            n += 1
    if not n:
        return data, 0
    return ("\n\n".join(parts) + tail).encode("utf-8", "surrogateescape"), n


def holds(data: bytes, text: str) -> bool:
    """Whether data, a markdown export, holds a block whose text is text (matching.same)."""
    return scrub(data, text, "")[1] > 0
