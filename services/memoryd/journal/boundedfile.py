"""memoryd's own small files and line files read with a bound, never whole.

A file memoryd reads at start (a saved copy under index/, memory/forgotten.jsonl,
memory/labels.jsonl) can be far larger than memoryd ever makes it: a damaged disk, a truncate
typed by mistake or a copy gone wrong leaves a gigabyte of NUL bytes there. Read whole, it took
memoryd past its container's memory before it served, and it was killed and started again without
a line naming the file.

read_most reads a kept file of a known shape whole only when it is within a bound the caller sets
(TooLarge past it, after an fstat, before a byte is read). Lines reads a line file a block of whole
lines at a time; a line longer than any memoryd writes is passed over unread (its number is kept,
for the one line the caller says of it), so memory stays bounded by a block and that bound,
whatever the file holds. with_lines gives a line file with lines added a block at a time, for a
write that lays it so (a restore's staged files). A caller that must know what a line passed over
names (labels.jsonl: the sessions it gives a label) is handed its bytes a piece at a time as they
pass (passed), never whole.
"""

import errno
import os
from collections.abc import Callable, Iterator
from typing import BinaryIO

from proto.files import TooLarge, open_file, open_read, read_at_most

# Far past the longest line memoryd writes to forgotten.jsonl or labels.jsonl (a key or a
# digest with its time and edit, a session's label: a few hundred bytes).
LINE_MOST = 64 << 10
BLOCK = 1 << 20


def too_large(path: str | os.PathLike, size: int, limit: int) -> TooLarge:
    return TooLarge(errno.EFBIG, f"{size:,} bytes, over its bound of {limit:,}", os.fspath(path))


def read_most(path: str | os.PathLike, limit: int) -> bytes:
    """The regular file at path whole (one open, no link followed), when it holds at most limit
    bytes; TooLarge when it holds more, read no further than limit + 1 bytes."""
    fd = open_file(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise too_large(path, size, limit)
        data = read_at_most(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:  # grew since its fstat
        raise too_large(path, len(data), limit)
    return data


def with_lines(path: str | os.PathLike, lines: bytes) -> Iterator[bytes]:
    """The bytes of the line file at path (none when it is missing) a block at a time, never
    whole, then lines (each ending in a newline) on lines of their own: what atomic_write takes
    to lay a file with lines added, however large the file has grown."""
    last = b"\n"
    try:
        f = open_read(path)
    except FileNotFoundError:
        pass
    else:
        with f:
            while chunk := f.read(BLOCK):
                last = chunk[-1:]
                yield chunk
    if last != b"\n":
        yield b"\n"  # a last line without its end would swallow the first one added
    yield lines


class Lines:
    """The lines in the next size bytes of f, in blocks of whole lines (each ends in a newline).
    Iterate for (first, block): first is the number (from 1) of the block's first line. A line
    longer than most bytes stands in its block as an empty line, so the numbers stay right; its
    number is in long. Afterwards rest is the last line when it has no newline (a line still
    being written, or a hand edit), after its number, and done how many bytes the blocks took:
    a last line past most is in long and taken too, as nothing memoryd writes makes it whole.

    A newline is LF; with cr, it is LF, CR or CR LF, as bytes.splitlines reads them (labels.jsonl
    has always been read so: a file saved with CR line ends is lines, not one long line). A CR
    ending a block at a read's edge is a line's end either way; an LF right after it in the
    next read is the rest of that line's end, counted as no line of its own.

    passed, when given, is called with (number, piece) for the bytes of each line passed over, in
    order, a piece at most a block and a bound long (its line end left out): what it keeps of them
    is its own."""

    def __init__(
        self,
        f: BinaryIO,
        size: int,
        most: int = LINE_MOST,
        block: int = BLOCK,
        cr: bool = False,
        passed: Callable[[int, bytes], None] | None = None,
    ) -> None:
        self._f, self._left, self._most, self._block = f, size, most, block
        self._cr = cr
        self._passed = passed
        self.long: list[int] = []
        self.rest = b""
        self.done = 0
        self.after = 1  # the number of the line after the blocks (rest, when there is one)
        self.through = 0  # the bytes up to the last newline

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        number = 1
        pending: list[bytes] = []  # the start of a line that runs past a block's end
        held = 0  # that line's bytes so far (in pending until passed, once past most)
        got = 0
        owed = False  # the last block ended in a CR at a read's edge
        while self._left > 0:
            chunk = self._f.read(min(self._block, self._left))
            if not chunk:
                break  # the file shrank since its stat: what was read stands
            self._left -= len(chunk)
            got += len(chunk)
            if owed and chunk[:1] == b"\n":
                chunk = chunk[1:]  # the LF of a CR LF the last read cut
            owed = False
            found = self._first_end(chunk)
            if found is None:
                held += len(chunk)
                pending = [*pending, chunk]
                if held > self._most:
                    self._pass(number, pending)
                    pending = []
                continue
            stop, after = found
            if held + stop > self._most:
                first = chunk[stop:after]  # the line that ran past the blocks was too long
                self._pass(number, [*pending, chunk[:stop]])
                self.long.append(number)
            else:
                first = b"".join([*pending, chunk[:after]])
            cut = max(after, self._last_end(chunk))
            data = first + chunk[after:cut]
            tail = chunk[cut:]
            owed = self._cr and not tail and chunk.endswith(b"\r")
            held, pending = len(tail), [tail] if tail else []
            del chunk
            data = self._shorten(data, number)
            yield number, data
            number += self._count(data)
        self.after = number
        self.through = got - held
        if held > self._most:
            self._pass(number, pending)  # a last line a read's tail made long at once
            self.long.append(number)
            self.done = got
        else:
            self.rest = b"".join(pending)
            self.done = self.through

    def _pass(self, number: int, pieces: list[bytes]) -> None:
        if self._passed is not None:
            for piece in pieces:
                if piece:
                    self._passed(number, piece)

    def _first_end(self, chunk: bytes) -> tuple[int, int] | None:
        """Where chunk's first line ends and the next begins; None when it holds no newline."""
        lf = chunk.find(b"\n")
        cr = chunk.find(b"\r") if self._cr else -1
        if cr == -1 or (lf != -1 and lf < cr):
            return None if lf == -1 else (lf, lf + 1)
        return cr, cr + 2 if chunk[cr + 1 : cr + 2] == b"\n" else cr + 1

    def _last_end(self, chunk: bytes) -> int:
        """Where the bytes after chunk's last newline begin (0 when it holds none)."""
        end = chunk.rfind(b"\n")
        if self._cr:
            end = max(end, chunk.rfind(b"\r"))
        return end + 1

    def _count(self, data: bytes) -> int:
        """How many lines data holds (it ends in a newline)."""
        if not self._cr:
            return data.count(b"\n")
        return data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")

    def _shorten(self, data: bytes, number: int) -> bytes:
        """data with each line longer than most left empty (its number noted in long)."""
        if len(data) <= self._most + 1:
            return data
        lines = data.splitlines(keepends=True) if self._cr else data.split(b"\n")
        ends = b"\r\n" if self._cr else b""
        if max(len(line.rstrip(ends) if ends else line) for line in lines) <= self._most:
            return data
        for i, line in enumerate(lines):
            body = line.rstrip(ends) if ends else line
            if len(body) > self._most:
                self._pass(number + i, [body])
                self.long.append(number + i)
                body = b""
            lines[i] = body
        # Each line ended by an LF: an empty line after a CR is not read as half of a CR LF.
        return b"\n".join(lines) + b"\n" if self._cr else b"\n".join(lines)
