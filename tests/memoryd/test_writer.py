"""memoryd.writer: one thread, jobs by priority then arrival, deadlines checked at the start."""

import threading
import time

import pytest

from memoryd.writer import BACKGROUND, SESSION, WRITE, NotStarted, Writer


def test_jobs_run_by_priority_then_arrival():
    writer = Writer()
    release = threading.Event()
    ran: list[str] = []
    writer.submit(WRITE, release.wait, 10)  # holds the thread while the others queue
    futures = [
        writer.submit(BACKGROUND, ran.append, "background 1"),
        writer.submit(SESSION, ran.append, "session 1"),
        writer.submit(WRITE, ran.append, "write 1"),
        writer.submit(BACKGROUND, ran.append, "background 2"),
        writer.submit(WRITE, ran.append, "write 2"),
    ]
    release.set()
    for future in futures:
        future.result(10)
    writer.shutdown()
    assert ran == ["write 1", "write 2", "session 1", "background 1", "background 2"]


def test_a_job_past_its_deadline_does_not_run():
    writer = Writer()
    release = threading.Event()
    ran: list[str] = []
    writer.submit(WRITE, release.wait, 10)
    late = writer.submit(WRITE, ran.append, "late", deadline=time.monotonic() + 0.01)
    in_time = writer.submit(WRITE, ran.append, "in time", deadline=time.monotonic() + 60)
    time.sleep(0.05)
    release.set()
    with pytest.raises(NotStarted):
        late.result(10)
    in_time.result(10)
    writer.shutdown()
    assert ran == ["in time"]


def test_an_error_reaches_the_caller_and_the_writer_goes_on():
    writer = Writer()

    def fail():
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        writer.submit(WRITE, fail).result(10)
    assert writer.submit(WRITE, lambda: 7).result(10) == 7
    writer.shutdown()
    with pytest.raises(RuntimeError):
        writer.submit(WRITE, lambda: 8)
