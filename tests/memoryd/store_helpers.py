"""Helpers for the MemoryStore tests: a store on a temporary home, a settable clock, snapshots."""

import datetime as dt
import json
from pathlib import Path
from types import SimpleNamespace

from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.journal import scan
from memoryd.journal.journal import EditLine
from memoryd.memory.store import MemoryStore
from memoryd.owner import dispatch
from tests.callargs import loose_call

REPO = Path(__file__).resolve().parents[2]
SOUL_STARTER = REPO / "config" / "soul.md"
CLEAN = {"session": "mm-clean0001", "call_id": "call-1", "taint": "private", "untrusted": False}
TAINTED = {"session": "mm-tainted01", "call_id": "call-2", "taint": "private", "untrusted": True}


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, start: dt.datetime = dt.datetime(2026, 9, 24, 21, 2, 11, tzinfo=dt.UTC)):
        self.now = start

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **kwargs: float) -> None:
        self.now += dt.timedelta(**kwargs)


def new_store(tmp_path: Path, *, review: bool = False, clock: Clock | None = None) -> MemoryStore:
    store = MemoryStore(
        Home(tmp_path / "home"), soul_starter=SOUL_STARTER, review=review, now=clock or Clock()
    )
    store.ensure()
    return store


def args(**fields: object) -> str:
    return json.dumps(fields)


def snapshot(store: MemoryStore) -> dict[str, bytes]:
    """Every file under memory/ and its bytes."""
    root = store.home.memory
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def memory_path(store: MemoryStore, name: str) -> Path:
    return store.home.memory_file(name)


def journal_lines(store: MemoryStore) -> list[dict]:
    """The journal's lines as written (the keys each line holds)."""
    return [line.dump() for line in store.journal.records()]


def fill(store: MemoryStore, file: str, texts: list[str]) -> None:
    for text in texts:
        store.call(*loose_call(args(action="add", file=file, text=text), **CLEAN))


def owner(store: MemoryStore, command: str, arg: str | dict = "") -> str:
    """An owner's command as bxctl sends it (a plain arg or a JSON object), run through memoryd's
    dispatch on this store; its answer. promote checks a note:N against the index, as the
    owner's search left it: one is opened for it, caught up with notes.md, and closed after."""
    _, run = dispatch.lookup(command, arg if isinstance(arg, str) else json.dumps(arg))
    if command != "promote":
        return run(SimpleNamespace(store=store))
    index = Index(store.home, max_class=store.max_class)
    index.open()
    try:
        index.catch_up_notes()
        index.notes_seen.print_numbers(range(1_000), index.notes_seen.renumbered)  # as a search
        return run(SimpleNamespace(store=store, index=index))
    finally:
        index.close()


def last_line(store: MemoryStore) -> EditLine:
    """The journal's last line, read as the owner's commands read it."""
    return scan.tail(store.journal.month_files(), 1)[0]


def line_of(store: MemoryStore, edit_id: str) -> EditLine | None:
    return scan.line_with_id(store.home.edits / f"{edit_id[:7]}.jsonl", edit_id)
