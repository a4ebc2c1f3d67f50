"""Calling something that must refuse a FIFO at once: if it waits for a writer instead, the call
is released (a writer opens and closes the FIFO) and the test fails, rather than hanging the run."""

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

PATIENCE = 10.0
T = TypeVar("T")


def without_waiting(call: Callable[[], T], fifo: Path) -> T:
    """call()'s result (or its exception); a failure if it is still waiting after PATIENCE."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as e:  # handed back to the test below
            outcome["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(PATIENCE)
    if thread.is_alive():
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # the waiting reader gets EOF
        except OSError:
            pass
        thread.join(PATIENCE)
        pytest.fail(f"waited on the FIFO {fifo}")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
