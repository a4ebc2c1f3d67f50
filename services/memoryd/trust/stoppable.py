"""A session log's file object whose reader can tell that memoryd is stopping (witness.py hands
it to logscan.scan, which stops within a chunk when it is)."""

import threading


class Stoppable:
    """A log's file object whose reader can tell that memoryd is stopping."""

    def __init__(self, f, stop: threading.Event):
        self._f = f
        self._stop = stop

    def stopping(self) -> bool:
        return self._stop.is_set()

    def seek(self, offset: int) -> int:
        return self._f.seek(offset)

    def read(self, size: int) -> bytes:
        return self._f.read(size)
