"""memory-mcp's log handler never waits for a stderr nobody reads: lines that do not fit are
dropped and counted, one line says how many where they were lost, and a flush at exit waits a
bounded time."""

import logging
import os
import threading
import time

from memory_mcp import logqueue
from memory_mcp.logqueue import Fd2, LogQueue
from proto.logline import OneLineFormatter

LINES = 5000
FILLER = b"filler\n"


def _queue_on_pipe() -> tuple[LogQueue, int, int]:
    read, write = os.pipe()
    target = logging.StreamHandler(Fd2(write, "utf-8", "strict"))
    target.setFormatter(OneLineFormatter("%(name)s %(levelname)s %(message)s"))
    return LogQueue(target, lines=100), read, write


def _fill(write: int) -> None:
    """The pipe full, as a stderr nobody reads is: the next write would wait."""
    os.set_blocking(write, False)
    try:
        while True:
            os.write(write, FILLER)
    except BlockingIOError:
        pass
    os.set_blocking(write, True)


def _record(message: str) -> logging.LogRecord:
    return logging.LogRecord("memory_mcp.test", logging.WARNING, __file__, 1, message, None, None)


def _emit_all(handler: LogQueue, messages: list[str]) -> None:
    """Every message emitted on a thread of its own, which must not stay blocked."""
    emitter = threading.Thread(target=lambda: [handler.handle(_record(m)) for m in messages])
    emitter.start()
    emitter.join(30)
    assert not emitter.is_alive(), "a log line waited for a stderr nobody reads"


def _read_until_flushed(handler: LogQueue, read: int, write: int) -> list[str]:
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.extend(iter(lambda: os.read(read, 65536), b"")))
    reader.start()
    handler.flush()
    os.close(write)
    reader.join(30)
    os.close(read)
    return [line for line in b"".join(got).decode().splitlines() if line != "filler"]


def _dropped(line: str) -> int:
    return int(line.split(" WARNING ")[1].split()[0])


def test_lines_past_a_full_stderr_are_dropped_counted_and_said_where_they_were():
    handler, read, write = _queue_on_pipe()
    _fill(write)
    _emit_all(handler, [f"line {n}" for n in range(LINES)])
    assert len(handler._queued) <= 100 + 1  # bounded: a count line may stand beside the lines
    lines = _read_until_flushed(handler, read, write)
    expected, said = 0, 0
    for line in lines:  # each line in order, each gap said where it is, with its size
        if "log line(s) dropped" in line:
            expected, said = expected + _dropped(line), said + 1
        else:
            assert line == f"memory_mcp.test WARNING line {expected}"
            expected += 1
    assert expected == LINES and said >= 1 and "dropped" in lines[-1]


def test_a_line_after_stderr_drains_follows_the_count():
    handler, read, write = _queue_on_pipe()
    _fill(write)
    _emit_all(handler, [f"line {n}" for n in range(LINES)])
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.extend(iter(lambda: os.read(read, 65536), b"")))
    reader.start()
    handler.flush()  # the queue written, then the count
    handler.handle(_record("after"))
    handler.flush()
    os.close(write)
    reader.join(30)
    os.close(read)
    lines = [line for line in b"".join(got).decode().splitlines() if line != "filler"]
    assert "log line(s) dropped" in lines[-2] and lines[-1] == "memory_mcp.test WARNING after"


def test_a_flush_at_exit_gives_up_on_a_stderr_nobody_reads():
    handler, read, write = _queue_on_pipe()
    _fill(write)
    handler.handle(_record("queued"))
    started = time.monotonic()
    handler.flush()
    waited = time.monotonic() - started
    assert logqueue.FLUSH_SECONDS - 0.5 < waited < logqueue.FLUSH_SECONDS + 10
    assert _read_until_flushed(handler, read, write) == ["memory_mcp.test WARNING queued"]


def test_a_stderr_that_is_read_gets_every_line_in_order_and_no_count():
    handler, read, write = _queue_on_pipe()
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.extend(iter(lambda: os.read(read, 65536), b"")))
    reader.start()
    for n in range(LINES):
        handler.handle(_record(f"line {n}"))
        if n % 50 == 0:
            handler.flush()  # a reader slower than the lines come would drop some
    handler.flush()
    os.close(write)
    reader.join(30)
    os.close(read)
    lines = b"".join(got).decode().splitlines()
    assert lines == [f"memory_mcp.test WARNING line {n}" for n in range(LINES)]


def test_the_connections_last_line_waits_for_room_a_reader_makes_as_the_client_ends():
    handler, read, write = _queue_on_pipe()
    _fill(write)
    _emit_all(handler, [f"line {n}" for n in range(LINES)])  # the queue full, the rest dropped
    got: list[bytes] = []

    def read_late() -> None:  # the client reads stderr only as it ends
        time.sleep(0.3)
        got.extend(iter(lambda: os.read(read, 65536), b""))

    reader = threading.Thread(target=read_late)
    reader.start()
    last = _record("the client closed the connection")
    last.__dict__[logqueue.LAST] = True
    handler.handle(last)
    handler.flush()
    os.close(write)
    reader.join(30)
    os.close(read)
    lines = [line for line in b"".join(got).decode().splitlines() if line != "filler"]
    assert lines[-1] == "memory_mcp.test WARNING the client closed the connection", lines[-2:]
    counted = sum(_dropped(line) for line in lines if "log line(s) dropped" in line)
    assert counted + sum("WARNING line " in line for line in lines) == LINES
