"""How far the hybrid mode's embedding is, for `bxctl memory stats` (and the stack's status).

The counts come from the index file itself (vectors written, rows still pending), so they are
true whoever asks; the rate is that of this process's embedding child over its last minute
(embedworker.Worker.rate), known only inside the memoryd that runs it, and the time left is the
pending rows at that rate. Nothing here writes.
"""

import os
import sqlite3
import threading
import weakref
from pathlib import Path

from memoryd.errors import IndexDamaged

_lock = threading.Lock()
_workers: "weakref.WeakValueDictionary[str, object]" = weakref.WeakValueDictionary()


def register(index_path: Path, worker: object) -> None:
    """The worker that embeds for the index at index_path (index.Index.open)."""
    with _lock:
        _workers[str(index_path)] = worker


def embedding(index_path: Path) -> dict | None:
    """{"done", "pending", "rate", "seconds_left"} for an index in mode hybrid, else None;
    rate and seconds_left are None while no rate is known (no batch in the last minute).
    IndexDamaged, naming the file, when it cannot be looked at (its folder unreadable)."""
    try:
        os.stat(index_path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise IndexDamaged(f"cannot read the memory index {index_path}: {e.strerror}") from None
    try:
        conn = sqlite3.connect(f"file:{index_path}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return None
    try:
        found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'vector_pending'").fetchone()
        if found is None:
            return None
        done, pending = conn.execute(
            "SELECT (SELECT count(*) FROM vectors), (SELECT count(*) FROM vector_pending)"
        ).fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    with _lock:
        worker = _workers.get(str(index_path))
    rate = worker.rate() if worker is not None else None  # type: ignore[attr-defined]
    left = None
    if pending == 0:
        left = 0.0
    elif rate:
        left = pending / rate
    return {"done": done, "pending": pending, "rate": rate, "seconds_left": left}


def _duration(seconds: float) -> str:
    minutes = int(seconds // 60)
    if minutes < 1:
        return "under a minute"
    hours, minutes = divmod(minutes, 60)
    return f"about {hours} h {minutes} min" if hours else f"about {minutes} min"


def line(progress: dict | None) -> str | None:
    """The stats line, None when the index is not in mode hybrid."""
    if progress is None:
        return None
    done, pending = progress["done"], progress["pending"]
    if pending == 0:
        return f"embedding (recall mode hybrid): all {done:,} records have their vector"
    text = (
        f"embedding (recall mode hybrid): {done:,} of {done + pending:,} records have their"
        f" vector, {pending:,} waiting (found by their words meanwhile)"
    )
    rate = progress["rate"]
    if rate:
        shown = f"{rate:,.1f}" if rate < 10 else f"{rate:,.0f}"
        text += f"; {shown} a second, {_duration(progress['seconds_left'])} left"
    return text
