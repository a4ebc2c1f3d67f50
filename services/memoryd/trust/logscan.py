"""The labels of the tool results in a stretch of a session log, read in bounded pieces.

The witness (witness.py) needs, from each tool_result record, only its top-level "class" and
"untrusted"; a record may be hundreds of megabytes (a tool result holding a whole file) and its
label may come after its output. So the log is read CHUNK bytes at a time and no line is ever
held whole: lines up to SHORT_LINE bytes are parsed as they are, a longer line is fed, piece by
piece, to proto.longlines' LineShrinker, which keeps its structure and the first KEEP bytes of
each string; the small line it gives is then parsed like any other. Memory stays in proportion to
CHUNK, SHORT_LINE and the structure limit, time in proportion to the bytes read.

KEEP is more than any string the label depends on can take in JSON ("tool_result" written with
\\u escapes is 66 bytes), so a cut never changes a key or value that decides a label, and a cut
string, still over 250 bytes, can never read as one of them.

Fail closed: a line that could be a tool result but does not parse as one, whose structure alone
is over the limit the indexer also refuses, or whose kept bytes are over HELD_LIMIT counts as
damaged: the caller makes the session untrusted. A last line without its newline is still being
written: it is left for the next read.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass

from proto.labels import CLASS_RANK, higher_class
from proto.longlines import LineShrinker
from proto.records import LONG_LINE_STRUCTURE

CHUNK = 256 << 10
SHORT_LINE = 256 << 10
KEEP = 256
# All a long line may keep, its strings' first KEEP bytes included: a line of a million short
# strings is refused (damaged: untrusted) rather than held.
HELD_LIMIT = 2 * LONG_LINE_STRUCTURE

# "tool_result" can be written in JSON only as these bytes or with \\u escapes: a line holding
# neither cannot decode to a tool result, and is not parsed at all. Most lines (user, assistant)
# are skipped that way, found by a search over the whole chunk, so a long log is read fast.
_MARKERS = (b"tool_result", b"\\u")


class Stopped(Exception):
    """The read was asked to stop (memoryd is stopping) before it reached the end."""


@dataclass
class Scan:
    """What a stretch of log showed: the strictest label of its tool results, the offset of the
    first byte not yet judged (a line still being written starts there) and where the first
    damaged line began (None if none)."""

    klass: str
    untrusted: bool
    offset: int
    damaged_at: int | None = None

    def fold(self, label, at: int) -> None:
        if label is _DAMAGED:
            # A damaged line could have been a tool result of any label.
            self.untrusted = True
            if self.damaged_at is None:
                self.damaged_at = at
        elif label is not None:
            self.klass = higher_class(self.klass, label[0])
            self.untrusted = self.untrusted or label[1]


def scan(f, start: int, klass: str, untrusted: bool, stopping: Callable[[], bool]) -> Scan:
    """Fold the labels of the complete lines of f from byte start into (klass, untrusted).
    Stopped when stopping() turns true between two chunks."""
    result = Scan(klass, untrusted, start)
    f.seek(start)
    rest = b""  # the start of a line shorter than SHORT_LINE so far
    long: LineShrinker | None = None  # the line over SHORT_LINE being read, kept small
    long_length = 0
    while True:
        if stopping():
            raise Stopped
        chunk = f.read(CHUNK)
        if not chunk:
            return result
        if long is not None:
            newline = chunk.find(b"\n")
            if newline < 0:
                long.feed(chunk)
                long_length += len(chunk)
                continue
            long.feed(chunk[:newline])
            result.fold(_long_line_label(long), result.offset)
            result.offset += long_length + newline + 1
            long, chunk = None, chunk[newline + 1 :]
        data = rest + chunk
        end = data.rfind(b"\n") + 1
        for offset, line in _candidate_lines(data, end):
            result.fold(_tool_result_label(line), result.offset + offset)
        result.offset += end
        rest = data[end:]
        if len(rest) > SHORT_LINE:
            long = LineShrinker(KEEP, limit=LONG_LINE_STRUCTURE, held_limit=HELD_LIMIT)
            long.feed(rest)
            long_length, rest = len(rest), b""


def _candidate_lines(data: bytes, end: int):
    """(offset, line) of each complete line of data[:end] that holds a marker, in order."""
    starts: set[int] = set()
    for marker in _MARKERS:
        found = data.find(marker, 0, end)
        while found != -1:
            start = data.rfind(b"\n", 0, found) + 1
            starts.add(start)
            found = data.find(marker, data.find(b"\n", found) + 1, end)
    for start in sorted(starts):
        yield start, data[start : data.find(b"\n", start) + 1]


def _long_line_label(shrinker: LineShrinker):
    if shrinker.too_large:
        return _DAMAGED
    line = shrinker.result()
    if not any(marker in line for marker in _MARKERS):
        return None  # KEEP holds every byte of "type":"tool_result", however it is escaped
    return _tool_result_label(line + b"\n")


_DAMAGED = object()


def _tool_result_label(line: bytes):
    """(class, untrusted) of a tool result line, None for another record, _DAMAGED for a line
    that is not a record at all."""
    try:
        record = json.loads(line.decode("utf-8"))  # a str skips json's guess of the encoding
    except (ValueError, RecursionError):  # not UTF-8 JSON, or nested past the parser's depth
        return _DAMAGED
    if not isinstance(record, dict):
        return _DAMAGED
    if record.get("type") != "tool_result":
        return None
    klass, untrusted = record.get("class"), record.get("untrusted")
    if klass not in CLASS_RANK or not isinstance(untrusted, bool):
        return _DAMAGED
    return klass, untrusted
