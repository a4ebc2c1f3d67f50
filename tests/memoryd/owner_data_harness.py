"""An in-process memoryd for the owner-data tests: store, index and service on a temporary home,
with the owner's commands run on the threads service.py runs them on (no sockets)."""

import json
from pathlib import Path

from memoryd.data import lay
from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.memory.store import MemoryStore
from memoryd.owner import dispatch
from memoryd.service import MemoryService
from memoryd.writer import WRITE
from proto.records import AssistantRecord, UserRecord, append_session_record
from tests.callargs import loose_call
from tests.memoryd.store_helpers import CLEAN, SOUL_STARTER, TAINTED, Clock

T = "2026-09-20T14:02:11Z"


class Memoryd:
    def __init__(self, root: Path, clock: Clock | None = None, max_class: str = "private"):
        self.home = Home(root)
        self.clock = clock or Clock()
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        lay.recover(self.home)  # as server.prepare does
        self.store = MemoryStore(
            self.home, soul_starter=SOUL_STARTER, now=self.clock, max_class=max_class
        )
        self.store.ensure()
        self.index = Index(self.home, max_class=max_class)
        self.index.open()
        self.service = MemoryService(self.store, self.index)
        self.index.catch_up_all()
        owner_searched(self.index)

    def admin(self, command: str, arg: dict | str = "") -> str:
        text = json.dumps(arg) if isinstance(arg, dict) else arg
        kind, run = dispatch.lookup(command, text)
        if kind == "read":
            return run(self.service)
        future = self.service._writer.submit(WRITE, self.service._admin_write, run, self.service)
        return self._caught_up(future.result())

    def data(self, command: str, **arg) -> dict:
        return json.loads(self.admin(command, arg))

    def call(self, args: dict, tainted: bool = False, session: str | None = None) -> str:
        who = dict(TAINTED if tainted else CLEAN)
        if session is not None:
            who["session"] = session
        parsed, caller = loose_call(json.dumps(args), **who)
        future = self.service._writer.submit(WRITE, _apply_call, self.service, parsed, caller)
        return self._caught_up(future.result())

    def _caught_up(self, answer: str) -> str:
        """answer, once the writer ran the catch-up of notes.md the write queued after itself
        (notesafter.py): the tests read the index as it is a moment after a write."""
        self.service._writer.submit(WRITE, lambda: None).result()
        return answer

    def say(self, session: str, *texts: str) -> None:
        """Session records (the owner said / the assistant said), indexed."""
        self.home.session_log(session).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        for n, text in enumerate(texts):
            record = UserRecord(time=T, content=text) if n % 2 == 0 else None
            record = record or AssistantRecord(time=T, content=text)
            append_session_record(self.home.session_log(session), record)
        self.service._writer.submit(WRITE, self.index.catch_up_session, session).result()

    def recall(self, query: str, k: int = 10) -> str:
        return self.service.recaller.recall(query, k, session="s-test").text

    def close(self) -> None:
        self.service.close()


def owner_searched(index: Index) -> None:
    """As if the owner had searched since memoryd started: the tests name notes by the numbers
    notes.md gives them, and a note:N is refused until a search of this memoryd printed them."""
    index.notes_seen.print_numbers(range(1_000), index.notes_seen.renumbered)


def _apply_call(service: MemoryService, args, caller) -> str:
    """A memory call as brokercalls applies it: applied, its notes.md catch-up queued."""
    return service._broker._apply(args, caller)
