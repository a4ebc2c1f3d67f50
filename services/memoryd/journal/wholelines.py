"""A journal month read a block of whole lines at a time.

A month can be hundreds of megabytes: read whole (and split into lines) it stayed in memoryd's
memory, twice over. The readers that search it (the sessions' labels, the forget lines) take it
a chunk at a time instead; a line torn by a chunk's end is carried into the next block, and a last
line without its newline (still being written) is left for the next read.

A line longer than LONG_LINE (far past any memoryd writes: a run of NUL bytes a power cut left,
a file copied over a month) is not held: only its first HEAD bytes are kept, as the line, enough
to say it is damaged and why, and the rest of it up to its newline is passed over. So memory stays
bounded by a chunk and LONG_LINE, whatever the file holds.
"""

from collections.abc import Iterator
from typing import BinaryIO

LONG_LINE = 64 << 20  # an entry file is read up to 1 MiB, and a line holds two, escaped
HEAD = 4096


class WholeLines:
    """The whole lines of the next size bytes of f, in blocks of about chunk bytes: iterate for
    (data, cut), whole lines being data[:cut]; afterwards done is how many bytes they took and
    rest the bytes after the last newline (the first HEAD of them past LONG_LINE)."""

    def __init__(self, f: BinaryIO, size: int, chunk: int) -> None:
        self._f, self._left, self._chunk = f, size, chunk
        self.done = 0
        self.rest = b""

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        pending: list[bytes] = []  # the start of a line torn by the chunks' ends
        held = 0  # how many bytes pending holds
        head: bytes | None = None  # the first bytes of a line past LONG_LINE, standing for it
        passed = 0  # how many bytes of that line after its head were passed over
        while self._left > 0:
            chunk = self._f.read(min(self._chunk, self._left))
            if not chunk:
                break  # the file shrank since its stat: what was read stands
            self._left -= len(chunk)
            cut = chunk.rfind(b"\n") + 1
            if not cut:
                if head is not None:
                    passed += len(chunk)
                    continue
                pending.append(chunk)  # a line longer than a chunk: held until its newline
                held += len(chunk)
                if held > LONG_LINE:
                    head = _first(pending, HEAD)
                    passed, pending, held = held - len(head), [], 0
                continue
            if head is not None:  # the long line ends here: its head and newline stand for it
                end = chunk.find(b"\n")
                self.done += passed + end
                cut += len(head) - end
                chunk = head + chunk[end:]
                head, passed = None, 0
            data = b"".join([*pending, chunk]) if pending else chunk
            cut += len(data) - len(chunk)
            del chunk
            pending = [data[cut:]] if cut < len(data) else []
            held = len(data) - cut
            self.done += cut
            yield data, cut
            del data  # not held while the next chunk is read
        self.rest = head if head is not None else b"".join(pending)


def _first(parts: list[bytes], n: int) -> bytes:
    """The first n bytes of parts joined, without joining them all."""
    out = b""
    for part in parts:
        out += part[: n - len(out)]
        if len(out) >= n:
            break
    return out
