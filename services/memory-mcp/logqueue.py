"""memory-mcp's log lines, written to stderr by a thread of their own.

The MCP stdio transport lets a client ignore the server's stderr. A client that takes it as a
pipe and never reads it fills the pipe after about 64 KiB, and a handler writing on the event loop
would then block it for good: memory-mcp would answer nothing more. So every line is formatted
where it is logged (one line per event, as logline formats it) and put in a queue of at most
LINES lines; a daemon thread writes them through the role's handler (stderr, or the log file
BOXMAKER_LOG_FILE names). A line that finds the queue full is dropped and counted, and one line
"N log lines dropped ..." stands where they were once stderr drains again: nothing is lost while
stderr is read, and the memory a client that does not read can cost is bounded.

The thread writes to fd 2 with os.write, past sys.stderr's buffer: a write blocked on a full pipe
holds no lock that logging's shutdown or the interpreter's exit would wait for. At exit the lines
still queued are written, waiting at most FLUSH_SECONDS for a stderr nobody reads; so does the
connection's last line when it finds the queue full, so that a client that reads stderr only as
it ends still gets it.
"""

import logging
import os
import select
import sys
import threading
import time
from collections import deque

from proto import logline

LINES = 1000  # a line is cut at logline.LINE_LIMIT characters: a few MB at most
FLUSH_SECONDS = 2.0
# A record logged with extra={LAST: True} (the connection's last line) waits up to FLUSH_SECONDS
# for room in a full queue before it is dropped.
LAST = "last_line"
log = logging.getLogger("memory_mcp.logqueue")


class Fd2:
    """sys.stderr's encoding written straight to its file descriptor, with no buffer between."""

    def __init__(self, fd: int, encoding: str, errors: str) -> None:
        self.fd = fd
        self.encoding = encoding
        self.errors = errors

    def write(self, text: str) -> int:
        view = memoryview(text.encode(self.encoding, self.errors))
        while view:
            try:
                view = view[os.write(self.fd, view) :]
            except BlockingIOError:  # a stderr the client made non-blocking: wait, on this thread
                select.select([], [self.fd], [])
        return len(text)

    def flush(self) -> None:
        """Nothing is buffered here."""


class LogQueue(logging.Handler):
    """Lines formatted by target's formatter, queued, and written by target on a thread."""

    def __init__(self, target: logging.Handler, lines: int = LINES) -> None:
        super().__init__(target.level)
        self.setFormatter(target.formatter)
        target.setFormatter(logging.Formatter("%(message)s"))  # it gets whole lines
        self.target = target
        self.lines = lines
        self._queued: deque[logging.LogRecord] = deque()
        self._dropped = 0
        self._writing = False
        self._changed = threading.Condition()
        threading.Thread(target=self._drain, name="memory-mcp log", daemon=True).start()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self._line(self.format(record), record.levelno, record.name)
        except Exception:  # a message whose arguments do not format: logging's own report
            self.handleError(record)
            return
        with self._changed:
            if len(self._queued) >= self.lines and getattr(record, LAST, False):
                self._room_for_the_last(time.monotonic() + FLUSH_SECONDS)
            if len(self._queued) >= self.lines:
                self._dropped += 1
                return
            if self._dropped:  # where the lost lines were, before this one
                self._queued.append(self._dropped_line())
            self._queued.append(line)
            self._changed.notify_all()

    def _room_for_the_last(self, end: float) -> None:
        """Wait (with _changed held) until the queue has room or end has passed: a connection's
        last line is the one its reader looks for, and a client that reads stderr at last, as
        it ends, makes room within moments."""
        while len(self._queued) >= self.lines:
            left = end - time.monotonic()
            if left <= 0:
                return
            self._changed.wait(left)

    def _line(self, text: str, level: int, name: str) -> logging.LogRecord:
        return logging.makeLogRecord({"msg": text, "levelno": level, "name": name})

    def _dropped_line(self) -> logging.LogRecord:
        """The line that stands for the dropped ones (the count taken: call with _changed held)."""
        count, self._dropped = self._dropped, 0
        record = logging.LogRecord(
            log.name,
            logging.WARNING,
            __file__,
            0,
            f"{count} log line(s) dropped: memory-mcp's stderr was not read as fast as they came",
            None,
            None,
        )
        return self._line(self.format(record), record.levelno, record.name)

    def _drain(self) -> None:
        while True:
            with self._changed:
                while not self._queued and not self._dropped:
                    self._changed.wait()
                line = self._queued.popleft() if self._queued else self._dropped_line()
                self._writing = True
            try:
                self.target.emit(line)  # the only writer of target: it needs no lock of ours
            except Exception:  # the thread goes on: later lines may be written
                self.handleError(line)
            finally:
                with self._changed:
                    self._writing = False
                    self._changed.notify_all()

    def flush(self) -> None:
        """Wait until the queued lines are written, or FLUSH_SECONDS have passed (logging's
        shutdown calls it at exit, and before memory-mcp ends on a client gone)."""
        end = time.monotonic() + FLUSH_SECONDS
        with self._changed:
            while self._queued or self._dropped or self._writing:
                left = end - time.monotonic()
                if left <= 0:
                    return
                self._changed.wait(left)


def configure_role() -> None:
    """logline's setup of every role, its handler's lines written by a LogQueue. A root logger
    that already had handlers (a test's capture) is left as logline leaves it."""
    root = logging.getLogger()
    before = list(root.handlers)
    logline.configure_role()
    for made in [h for h in root.handlers if h not in before]:
        _write_past_buffer(made)
        root.removeHandler(made)
        root.addHandler(LogQueue(made))


def _write_past_buffer(handler: logging.Handler) -> None:
    """A handler writing to sys.stderr writes to its fd with no buffer between (see the module);
    a stderr that is not a real file (a capture) is left as it is."""
    if not isinstance(handler, logging.StreamHandler) or handler.stream is not sys.stderr:
        return
    stream = handler.stream
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return
    encoding = getattr(stream, "encoding", None) or "utf-8"
    errors = getattr(stream, "errors", None) or "backslashreplace"
    handler.setStream(Fd2(fd, encoding, errors))
