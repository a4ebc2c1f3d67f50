"""The pass that counts the index's common terms ahead (warmcounts.py), run on a pooled reader.

It holds a reader for seconds at a million records, so it must give way: a reindex's swap and a
close interrupt it (stop_warming), and one queued before a close, or stopped while taking its
reader, starts no pass. Either way it is logged in one line.
"""

import logging
import sqlite3
from pathlib import Path

from memoryd.errors import IndexDamaged
from memoryd.index import warmcounts
from memoryd.index.connections import Connections

# Logged under the index's name, as before the pass had a module of its own.
log = logging.getLogger("memoryd.index.index")


class Warming(Connections):
    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._warming: sqlite3.Connection | None = None  # warm_counts' reader, while it reads
        self._warm_stopped = False

    def warm_counts(self) -> None:
        """Count the common terms of the index's tables in one pass each (warmcounts.py), on a
        reader under the swap gate; stop_warming() interrupts it. Logged either way."""
        with self._gate.shared():
            with self._pool_lock:
                if self._warm_stopped or self._writer is None:  # closing, or closed
                    return
            try:
                conn = self._take()
            except IndexDamaged:  # logged; recall meets it too
                return
            with self._pool_lock:
                if self._warm_stopped:  # stopped meanwhile: nothing to interrupt it later
                    self._pool.append(conn)
                    return
                self._warming = conn
            try:
                spec, context, took = warmcounts.warm(conn)
            except sqlite3.Error as error:  # interrupted (a close, a swap), or a damaged file
                log.info("index %s: common terms not counted ahead: %s", self.path, error)
                conn.close()  # never given back half way through a transaction
                return
            finally:
                with self._pool_lock:
                    self._warming = None
            self._give(conn)
        log.info(
            "index %s: counted ahead the common terms of recall (%d, context %d) in %.1f s",
            self.path,
            spec,
            context,
            took,
        )

    def stop_warming(self, for_good: bool = False) -> None:
        """Interrupt warm_counts' pass, if one is reading (a swap needs its reader); for_good:
        and start none until the index opens again (memoryd closes)."""
        with self._pool_lock:
            self._warm_stopped = self._warm_stopped or for_good
            if self._warming is not None:
                self._warming.interrupt()
