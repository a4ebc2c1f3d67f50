"""How far the hybrid mode's embedding is, for `bxctl memory stats` (and the stack's status).

The counts come from the index file itself (vectors written, rows still pending), so they are true
whoever asks; the rate is that of this process's embedding child over its last minute
(embedworker.Worker.rate, counted up to now), known only inside the memoryd that runs it, and the
time left is the pending rows at that rate; once a batch has waited several batches' time, the line
says how long no record has been embedded instead (Worker.still): a rate and a time left would claim
a pace the pass does not keep. Why a question could not be embedded (Worker.fault: the model cannot
load, the child fails) is said whether or not rows wait: recall then answers by words alone, and the
owner is told so until a question is embedded again. Whether the embedding is paused, and why, is
the embedder thread's (embedbatch.Batches.paused), known there too; the rows skipped (embedbatch.py:
the model could not embed them) are those of the file with neither a vector nor a place on the
pending list. While the vector search's own index is first built over a table of ann.ANN_AT
vectors or more (ann.Ann.building_first), recall searches only the newest ANN_AT rows by meaning,
the others by their words, and the line says so. Nothing here writes.
"""

import os
import sqlite3
import threading
import weakref
from pathlib import Path

from memoryd.errors import IndexDamaged
from memoryd.index import dbname

_lock = threading.Lock()
_workers: "weakref.WeakValueDictionary[str, object]" = weakref.WeakValueDictionary()
_embedders: "weakref.WeakValueDictionary[str, object]" = weakref.WeakValueDictionary()
_anns: "weakref.WeakValueDictionary[str, object]" = weakref.WeakValueDictionary()


def register(index_path: Path, worker: object) -> None:
    """The worker that embeds for the index at index_path (index.Index.open)."""
    with _lock:
        _workers[str(index_path)] = worker


def watch(index_path: object, batches: object) -> None:
    """The embedder thread's state (embedbatch.Batches: paused) for the index at index_path."""
    with _lock:
        _embedders[str(index_path)] = batches


def watch_ann(index_path: object, ann: object) -> None:
    """The vector search index (ann.Ann: whether it is first being built) of the index at
    index_path."""
    with _lock:
        _anns[str(index_path)] = ann


def embedding(index_path: Path) -> dict | None:
    """{"done", "pending", "skipped", "paused", "rate", "seconds_left", "still", "words_only",
    "searched"}
    for an index in mode hybrid, else None; rate and seconds_left are None while no rate is
    known (no batch in the last minute) or the pass stands still (still: the seconds since a
    record was embedded), paused None unless embedding is paused (then why, in one line),
    words_only None unless recall answers by words alone (then why, in one line), searched
    None unless the vector search's index is first being built (then the number of the newest
    rows searched by meaning meanwhile).
    IndexDamaged, naming the file, when it cannot be looked at (its folder unreadable)."""
    try:
        os.stat(index_path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise IndexDamaged(f"cannot read the memory index {index_path}: {e.strerror}") from None
    try:
        conn = dbname.connect_read_only(index_path, timeout=5)
    except sqlite3.Error:
        return None
    try:
        found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'vector_pending'").fetchone()
        if found is None:
            return None
        done, pending, rows = conn.execute(
            "SELECT (SELECT count(*) FROM vectors), (SELECT count(*) FROM vector_pending),"
            " (SELECT count(*) FROM sources)"
        ).fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    with _lock:
        worker = _workers.get(str(index_path))
        batches = _embedders.get(str(index_path))
        ann = _anns.get(str(index_path))
    rate = worker.rate() if worker is not None else None  # type: ignore[attr-defined]
    # A worker that keeps no batch in flight (tests, benchmarks) never stands still.
    still_for = getattr(worker, "still", None) if pending else None
    still = still_for() if still_for is not None else None
    if still is not None:
        rate = None
    paused = getattr(batches, "paused", None) if pending else None
    left = None
    if pending == 0:
        left = 0.0
    elif rate:
        left = pending / rate
    return {
        "done": done,
        "pending": pending,
        "skipped": max(0, rows - done - pending),
        "paused": paused,
        "rate": rate,
        "seconds_left": left,
        "still": still,
        "words_only": getattr(worker, "fault", None),
        "searched": _searched(ann, done),
    }


def _searched(ann: object, done: int) -> int | None:
    building = getattr(ann, "building_first", None)
    at = building() if building is not None else None
    return None if at is None or done <= at else at


def _duration(seconds: float) -> str:
    minutes = int(seconds // 60)
    if minutes < 1:
        return "under a minute"
    hours, minutes = divmod(minutes, 60)
    return f"about {hours} h {minutes} min" if hours else f"about {minutes} min"


# What paused says while a rebuilt index's kept vectors are given out (hybrid.py): a wait for
# work already done, not a failure tried again less and less often.
CARRYING = "waiting for the vectors kept from the index before the rebuild"


def line(progress: dict | None) -> str | None:
    """The stats line, None when the index is not in mode hybrid."""
    if progress is None:
        return None
    done, pending = progress["done"], progress["pending"]
    skipped = progress.get("skipped") or 0  # absent from an older memoryd's answer
    if pending == 0 and not skipped:
        every = "the 1 record has" if done == 1 else f"all {done:,} records have"
        text = f"embedding (recall mode hybrid): {every} {'its' if done == 1 else 'their'} vector"
        return text + _searching(progress) + _words_only(progress)
    text = (
        f"embedding (recall mode hybrid): {done:,} of {done + pending + skipped:,} records have"
        f" their vector"
    )
    if pending:
        text += f", {pending:,} waiting (found by their words meanwhile)"
    if skipped:
        text += (
            f", {skipped:,} skipped (the model could not embed {'it' if skipped == 1 else 'them'}:"
            " found by words only; memoryd's log names each; a reindex tries again)"
        )
    text += _searching(progress)
    if progress.get("paused"):
        if progress["paused"] == CARRYING:
            text += f"; {CARRYING}"
        else:
            text += f"; paused, tried again less and less often: {progress['paused']}"
        return text + _words_only(progress)
    rate, still = progress["rate"], progress.get("still")
    if still is not None and pending:
        text += f"; standing still: no record embedded for {still:,.0f} s"
    elif rate and pending:
        shown = f"{rate:,.1f}" if rate < 10 else f"{rate:,.0f}"
        text += f"; {shown} a second, {_duration(progress['seconds_left'])} left"
    return text + _words_only(progress)


def _searching(progress: dict) -> str:
    searched = progress.get("searched")  # absent from an older memoryd's answer
    if not searched:
        return ""
    return (
        f"; vector search index being built: until it is, the newest {searched:,} of the"
        f" {progress['done']:,} records with a vector are searched by meaning, the others by"
        " their words"
    )


def _words_only(progress: dict) -> str:
    why = progress.get("words_only")
    if not why:
        return ""
    if progress.get("paused") and why.startswith(progress["paused"]):
        return "; recall answers by words alone now, for the same reason"
    return (
        f"; recall answers by words alone now (its question could not be embedded: {why});"
        " hybrid is whole again once a question is embedded"
    )
