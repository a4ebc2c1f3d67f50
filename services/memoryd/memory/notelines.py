"""Where notes.md's lines end, as notes.parse reads them: at an LF, a CR or a CR LF.

notes.parse splits notes.md with bytes.splitlines, so a file an editor saved with CR line ends
is lines, not one long line. The index reads notes.md a block at a time and takes only whole
lines from it (a last line without its end is still being written): a reader that took only an
LF for a line's end left every note after the last LF unindexed until an LF next followed. A CR
ending what was read ends its line; an LF that follows it later is the rest of that line end
(owed_lf), not a line of its own.
"""

CR, LF = b"\r", b"\n"


def last_end(data: bytes | bytearray, end: int | None = None) -> int:
    """Where the bytes after the last line end in data[:end] begin: 0 when it holds none."""
    end = len(data) if end is None else end
    return max(data.rfind(LF, 0, end), data.rfind(CR, 0, end)) + 1


def owed_lf(before: bytes, data: bytes) -> bool:
    """Whether data starts with the LF of a CR LF whose CR is the last byte of before."""
    return before.endswith(CR) and data.startswith(LF)
