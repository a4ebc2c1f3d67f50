"""Recall on an Index without a server, for tests and benchmarks: one Recaller kept per index and
closed with it (memoryd itself holds its own Recaller in its service)."""

import threading

from memoryd.index.index import Index
from memoryd.recall.recaller import Recaller, RecallResult

_RECALLERS: dict[Index, Recaller] = {}  # each removed and closed when its index closes
_RECALLERS_LOCK = threading.Lock()


def recall_on(
    index: Index, query: str, k: int = 5, *, session: str, by: str | None = None
) -> RecallResult:
    """Recall on index through one Recaller kept for it and closed with it (tests, benchmarks:
    memoryd itself holds its own Recaller)."""
    with _RECALLERS_LOCK:
        recaller = _RECALLERS.get(index)
        if recaller is None:
            recaller = _RECALLERS[index] = Recaller(index)
            index.on_close(lambda: _forget(index))
    return recaller.recall(query, k, session=session, by=by)


def _forget(index: Index) -> None:
    with _RECALLERS_LOCK:
        recaller = _RECALLERS.pop(index, None)
    if recaller is not None:
        recaller.close()
