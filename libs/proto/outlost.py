"""Output that cannot be written (a full disk, a closed pipe) said in one line, exit 4.

Python meets a stdout on a full disk or a pipe whose reader is gone with an OSError, which left
alone is a traceback of many lines, where the README promises that errors are one line. bxctl
says it in one line and exits 4; usage.run() does the same for every other command through
watching(): stdout is written through a layer that notes its own write errors, so that only an
error of stdout is said so, never one of a file a command writes (a role's journal on a full
disk stays the error it is). A command that changed something before its output was lost says
what with done(), so that the owner does not take the lost output for nothing done.
"""

import contextlib
import errno
import io
import os
import sys
from collections.abc import Iterator

from proto.escape import escape

# The errors of writing the output: it went nowhere, and the owner must be told.
OUTPUT_ERRORS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EBADF, errno.EPIPE}
)
# As bxctl's: not 1 (refused), since what the command did before stands.
EXIT_OUTPUT_LOST = 4

_LOST: list[str] = []  # why stdout could not be written, once it could not
_DONE: list[str] = []  # what the command did before its output, said if the output is lost


class _Watched(io.BufferedIOBase):
    """stdout's binary stream, noting the errors of its writes (and passing them on)."""

    def __init__(self, inner) -> None:
        super().__init__()
        self._inner = inner

    def _noted(self, call, *args):
        try:
            return call(*args)
        except OSError as e:
            if e.errno in OUTPUT_ERRORS and not _LOST:
                gone = " (the reader of the output is gone)" if e.errno == errno.EPIPE else ""
                _LOST.append(f"{e.strerror or e}{gone}")
            raise

    def write(self, data) -> int:
        return self._noted(self._inner.write, data)

    def flush(self) -> None:
        if not self.closed:
            self._noted(self._inner.flush)

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._inner.fileno()

    def isatty(self) -> bool:
        return self._inner.isatty()


def lost() -> str | None:
    """Why stdout could not be written, or None while it could."""
    return _LOST[0] if _LOST else None


def done(what: str) -> None:
    """Note what the command did (a session started, a call applied) before writing its output:
    said in the line if that output cannot be written."""
    _DONE.append(what)


def echo(text: str) -> None:
    """text and a line break on stdout. A stdout closed before the command started (Python's
    sys.stdout is None, which print and typer.echo pass over without a word) is lost output too."""
    if sys.stdout is None:
        _LOST.append("the standard output is closed")
        raise OSError(errno.EBADF, _LOST[0])
    # print, not typer.echo: click writes UTF-8 past a narrow locale's stdout, which
    # proto.narrowterm has set to escape what it cannot hold
    print(text)


def line(prog: str) -> str:
    """The one line: why, and what was done first (escaped: a tool's name is the driver's)."""
    why = lost() or os.strerror(errno.EIO)
    if not _DONE:
        return f"{prog}: the output could not be written: {why}"
    said = escape("; ".join(_DONE), markup=False)
    return f"{prog}: {said}, but its output could not be written: {why}"


@contextlib.contextmanager
def watching() -> Iterator[None]:
    """stdout written through _Watched while the block runs (as it is, when there is none or it
    is no text file: a test's capture), then flushed and put back."""
    real = sys.stdout
    buffer = getattr(real, "buffer", None)
    if not isinstance(real, io.TextIOWrapper) or buffer is None:
        yield
        return
    sys.stdout = io.TextIOWrapper(
        _Watched(buffer),
        encoding=real.encoding,
        errors=real.errors,
        line_buffering=real.line_buffering,
    )
    try:
        yield
        sys.stdout.flush()
    finally:
        sys.stdout = real


def say_lost(prog: str) -> None:
    """The one line on stderr, with fd 1 pointed at /dev/null first so that what is still
    buffered cannot fail again at exit."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    with contextlib.suppress(OSError, ValueError):
        print(line(prog), file=sys.__stderr__ or sys.stderr)
