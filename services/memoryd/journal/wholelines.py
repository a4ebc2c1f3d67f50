"""A journal month read a block of whole lines at a time.

A month can be hundreds of megabytes: read whole (and split into lines) it stayed in memoryd's
memory, twice over. The readers that search it (the sessions' labels, the forget lines) take it
a chunk at a time instead; a line torn by a chunk's end is carried into the next block, and a last
line without its newline (still being written) is left for the next read.
"""

from collections.abc import Iterator
from typing import BinaryIO


class WholeLines:
    """The whole lines of the next size bytes of f, in blocks of about chunk bytes: iterate for
    (data, cut), whole lines being data[:cut]; afterwards done is how many bytes they took and
    rest the bytes after the last newline."""

    def __init__(self, f: BinaryIO, size: int, chunk: int) -> None:
        self._f, self._left, self._chunk = f, size, chunk
        self.done = 0
        self.rest = b""

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        pending: list[bytes] = []  # the start of a line torn by the chunks' ends
        while self._left > 0:
            chunk = self._f.read(min(self._chunk, self._left))
            if not chunk:
                break  # the file shrank since its stat: what was read stands
            self._left -= len(chunk)
            cut = chunk.rfind(b"\n") + 1
            if not cut:
                pending.append(chunk)  # a line longer than a chunk: held until its newline
                continue
            data = b"".join([*pending, chunk]) if pending else chunk
            cut += len(data) - len(chunk)
            del chunk
            pending = [data[cut:]] if cut < len(data) else []
            self.done += cut
            yield data, cut
            del data  # not held while the next chunk is read
        self.rest = b"".join(pending)
