"""One very long JSON line, read in chunks and kept small.

A session record can be tens of megabytes (a tool result holding a whole file). To label and index
it, memoryd needs its structure (type, time, class, untrusted, call names) and the first part of its
texts, never all of it. LineShrinker is fed the bytes of one line in chunks and keeps everything
outside strings as it is and the first `keep` bytes of each string, cut where the JSON stays valid:
never inside an escape, a UTF-8 character or a surrogate pair. Memory stays in proportion to
`keep` and to the line's structure, not to its length.

What is dropped is not checked: a line whose only fault lies past the cut of a string reads as a
whole record, cut. A line whose structure alone is over `limit` bytes is refused (too_large).
Each string keeps up to `keep` bytes, so a line of many strings keeps up to `keep` bytes for each
three bytes of structure; a reader that needs a bound on all it holds sets `held_limit` (the
witness does), and a line that keeps more is refused too.
"""

import re

_HIGH_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9A-Fa-f]{2}\Z")
# A string's content up to its closing quote or the chunk's end: runs of plain bytes and whole
# escapes, matched in C (possessive: no backtracking state), so a string full of escaped quotes
# costs no Python step per quote. It stops short only at a backslash that ends the chunk. A string
# without a backslash before the next quote is found faster still, with find.
_CONTENT = re.compile(rb'[^"\\]*+(?:\\.[^"\\]*+)*+', re.DOTALL)


def _backslash_run(data: bytes) -> int:
    """How many backslashes data ends with."""
    return len(data) - len(data.rstrip(b"\\"))


def safe_prefix(raw: bytes) -> bytes:
    """The longest start of raw (a JSON string's content, cut anywhere) that is itself valid:
    no partial escape, no partial UTF-8 character, no high surrogate without its pair."""
    # A trailing escape is partial unless complete (\n is 2 bytes, \uXXXX is 6); an escape starts
    # at a backslash preceded by an even run of backslashes.
    for back in range(1, min(len(raw), 6) + 1):
        start = len(raw) - back
        if raw[start] != 0x5C or _backslash_run(raw[:start]) % 2:
            continue
        tail = raw[start:]
        complete = len(tail) >= (6 if tail[1:2] == b"u" else 2)
        if not complete:
            raw = raw[:start]
        break
    if _HIGH_SURROGATE.search(raw) and _backslash_run(raw[:-6]) % 2 == 0:
        raw = raw[:-6]
    # A UTF-8 character cut in its middle: drop its first bytes.
    for back in range(1, min(len(raw), 4) + 1):
        byte = raw[-back]
        if byte & 0xC0 == 0x80:
            continue  # a continuation byte: look further back for the lead
        if byte >= 0xC0:
            length = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            if back < length:
                raw = raw[:-back]
        break
    return raw


class LineShrinker:
    """Feed one line's bytes (without its newline) in chunks; result() is the line kept small."""

    def __init__(self, keep: int, limit: int, held_limit: int | None = None):
        self.keep = keep
        self.limit = limit
        self.held_limit = held_limit  # if set: all that is kept, strings too, is bounded
        self.too_large = False
        self.cut = False  # some string was cut
        self._out = bytearray()
        self._structure_bytes = 0  # what lies outside strings: what limit bounds
        self._in_string = False
        self._kept = bytearray()  # the current string's content kept so far
        self._string_cut = False
        self._escaped = False  # the previous chunk ended inside a string with an escape's backslash

    def feed(self, chunk: bytes) -> None:
        position, end = 0, len(chunk)
        while position < end and not self.too_large:
            if not self._in_string:
                quote = chunk.find(b'"', position)
                stop = end if quote < 0 else quote + 1
                self._structure(chunk[position:stop])
                position = stop
                if quote >= 0:
                    self._in_string = True
                continue
            if self._escaped:  # this byte completes the escape the last chunk began
                self._content(chunk[position : position + 1])
                self._escaped = False
                position += 1
                continue
            quote = chunk.find(b'"', position)
            stop = end if quote < 0 else quote
            if chunk.find(b"\\", position, stop) >= 0:  # escapes: the quote may be one of them
                stop = _CONTENT.match(chunk, position).end()  # type: ignore[union-attr]
            if not self._string_cut:
                self._content(chunk[position:stop])
            if stop == end:
                return
            if chunk[stop] == 0x22:  # the closing quote
                self._close_string()
            else:  # a backslash, the chunk's last byte: its escape goes on in the next chunk
                self._content(chunk[stop : stop + 1])
                self._escaped = True
            position = stop + 1

    def _structure(self, data: bytes) -> None:
        self._out += data
        self._structure_bytes += len(data)
        if self._structure_bytes > self.limit:
            self.too_large = True

    def _content(self, data: bytes) -> None:
        if self._string_cut:
            return
        room = self.keep - len(self._kept)
        if len(data) <= room:
            self._kept += data
        else:
            self._kept += data[:room]
            self._string_cut = True

    def _close_string(self) -> None:
        kept = bytes(self._kept)
        if self._string_cut:
            kept = safe_prefix(kept)
            self.cut = True
        self._kept.clear()
        self._string_cut = False
        self._in_string = False
        self._out += kept  # a string's content is bounded by keep (and held_limit), not by limit
        self._structure(b'"')
        if self.held_limit is not None and len(self._out) > self.held_limit:
            self.too_large = True

    def result(self) -> bytes:
        """The line as kept; an unfinished string stays unfinished (the parser calls it damage)."""
        if self._in_string:
            return bytes(self._out) + bytes(self._kept)
        return bytes(self._out)
