"""What a recall mode is, and the modes by name.

A mode owns tables derived from the spec's rows (create, drop, rows_added, rows_deleted, and
carry_over for what a reindex can keep from the old file), and answers recall (search). What it
keeps running beside an open index (hybrid's matrix and embedder) is its Live, made by open(); a
mode with nothing running answers from its tables alone. The index, the indexer and recall ask
the registry for the configured mode and call it: none of them branches on a mode's name.
"""

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from memoryd.search.hit import Hit
from memoryd.search.query import Query

Connect = Callable[[], AbstractContextManager[sqlite3.Connection]]
# What takes the spec's rows as they are added (a mode's rows_added, or what renew returns).
Fill = Callable[[sqlite3.Connection, list[tuple], list[tuple]], None]


class Live(Protocol):
    """A mode's state beside one open index."""

    def search(self, conn: sqlite3.Connection, query: Query, k: int) -> list[Hit]: ...

    def reset(self) -> None:
        """The index file was replaced by a reindex."""

    def drain(self, timeout: float) -> bool:
        """Wait until the mode's background work is done (tests, benchmarks); False on timeout."""

    def close(self) -> None: ...


class Mode:
    """A recall mode: the spec's own has no tables; the others override what they keep."""

    name = ""
    # The tables and indexes the mode adds to the spec's (all there, or the mode is rebuilt).
    objects: tuple[str, ...] = ()

    def load(self) -> None:
        """Make sure the mode can run (its packages, its model) before the index is changed;
        raises StartFailed when it cannot."""

    def create(self, conn: sqlite3.Connection) -> None:
        """Create the mode's tables, empty."""

    def drop(self, conn: sqlite3.Connection) -> None:
        """Drop the mode's tables, if there."""

    def rows_added(
        self, conn: sqlite3.Connection, sources: list[tuple], texts: list[tuple]
    ) -> None:
        """The indexer added these rows to sources and hits (same rowids)."""

    def rows_deleted(self, conn: sqlite3.Connection, where: str, params: tuple) -> None:
        """The indexer is about to delete the sources rows matching where (its own clause)."""

    def renew(self, conn: sqlite3.Connection, names: frozenset[str]) -> Fill | None:
        """Empty the mode's tables named, keeping its others as they are, and return what fills
        them again from the spec's rows (called as rows_added is); None when they cannot be
        built apart from the rest (the mode is then built whole)."""
        return None

    def carry_over(self, conn: sqlite3.Connection, old: Path) -> int:
        """A reindex built conn's file beside the index old: copy what need not be computed
        again; returns how many rows were carried."""
        return 0

    def search(self, conn: sqlite3.Connection, query: Query, k: int) -> list[Hit]:
        raise NotImplementedError

    def open(self, connect: Connect, name: object) -> Live:
        """What runs beside an open index (connect: a connection under the index's gate)."""
        return Stateless(self)


class Stateless:
    """The Live of a mode that answers from its tables alone."""

    def __init__(self, mode: Mode):
        self.mode = mode

    def search(self, conn: sqlite3.Connection, query: Query, k: int) -> list[Hit]:
        return self.mode.search(conn, query, k)

    def reset(self) -> None:
        pass

    def drain(self, timeout: float) -> bool:
        return True

    def close(self) -> None:
        pass


_MODES: dict[str, Mode] = {}


def register(mode: Mode) -> Mode:
    """Add a mode under its name (a second one of the same name replaces nothing: refused)."""
    if not mode.name or mode.name in _MODES:
        raise ValueError(f"recall mode {mode.name!r} is already registered or has no name")
    _MODES[mode.name] = mode
    return mode


def get(name: str) -> Mode:
    found = _MODES.get(name)
    if found is None:
        raise ValueError(f"not a recall mode: {name!r}")
    return found


def names() -> tuple[str, ...]:
    return tuple(_MODES)


def every() -> tuple[Mode, ...]:
    return tuple(_MODES.values())
