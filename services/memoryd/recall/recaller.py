"""Recall: search the index, tag each hit, render the answer, label it, log it (spec 5).

Each hit starts with one of three source tags, so the model can weigh it: identity for entries
moved out of memory.md or user.md, memory for records and notes of clean sessions and for dropped
entries, memory-tainted for records and notes of sessions that had read untrusted content. The
result's class is the highest among the hits (at least private), and it is untrusted if any hit is
memory-tainted.

The query is split once, into a query.Query, which the search (topk.py, textcut.py) and the recall
modes (modes/context.py, modes/hybrid.py) take their terms from. Recaller runs a recall on a read
connection that Index hands out (Index.reader) and owns the recall log; the index knows nothing of
recall.
"""

import logging
import threading
from dataclasses import dataclass, field, replace

from memoryd.index.index import Index
from memoryd.journal import forgotten, keptout
from memoryd.journal.recallline import RecallHit, RecallLine
from memoryd.modes.registry import Stateless
from memoryd.modes.spec import SOURCE, search
from memoryd.recall.logfile import RecallLog
from memoryd.search.defuse import defuse, defuse_within
from memoryd.search.hit import Hit
from memoryd.search.query import SNIPPET_LIMIT, Query
from proto.labels import Label, higher_class
from proto.plural import counted
from proto.records import now_rfc3339

log = logging.getLogger(__name__)

# The FTS5 query on its own: what the benchmark runs directly to compare with recall.
SEARCH = "SELECT rowid, text FROM hits WHERE hits MATCH ? ORDER BY rank LIMIT ?"
# After the hits of a recall answered while notes.md changed since the index last read it (the
# writer busy: recall/notesbehind.py); a reading part way says how far instead (Index.meanwhile).
NOTES_CHANGED = (
    "(the index is catching up with memory/notes.md: it changed since the index last read it, so"
    " notes are found as they were then, not as they are now)"
)


@dataclass(frozen=True)
class RecallResult:
    text: str
    label: Label
    hits: list[Hit] = field(default_factory=list)


def _not_forgotten(hits: list[Hit], gone: frozenset[str]) -> list[Hit]:
    """The hits whose record or note forgotten.jsonl does not list. A forget lists its keys
    before it deletes their rows; if the deletion fails (the index's disk is full), the rows stay
    until a rerun or a reindex, and recall must not return them meanwhile."""
    if not gone:
        return hits
    return [
        h
        for h in hits
        if (
            forgotten.session_key(h.session, h.record)
            if h.kind == "session"
            else forgotten.note_key(h.record)
        )
        not in gone
    ]


def render(query: str, hits: list[Hit]) -> str:
    """The answer to the model: each hit's line then its snippet, or the no-matches sentence."""
    if not hits:
        # The query is the model's own text: echoed defused, it cannot pass for a hit header.
        return f'(no matches for "{defuse(query)}")'
    lines = []
    for position, hit in enumerate(hits, 1):
        lines.append(hit.header(position))
        # At most 600 characters as the model reads them: escapes count whole (spec 5).
        lines.append(defuse_within(hit.snippet, SNIPPET_LIMIT))
    return "\n".join(lines)


def result_label(hits: list[Hit]) -> Label:
    """The highest class among the hits (at least private); untrusted if any is memory-tainted."""
    klass = "private"
    for hit in hits:
        klass = higher_class(klass, hit.klass)
    untrusted = any(hit.tag == "memory-tainted" for hit in hits)
    # Validated as any label is: the class comes from the index as text.
    return Label.model_validate({"class": klass, "untrusted": untrusted})


def result(query: str, hits: list[Hit]) -> RecallResult:
    return RecallResult(text=render(query, hits), label=result_label(hits), hits=hits)


def log_line(
    when: str,
    session: str,
    query: str,
    k: int,
    hits: list[Hit],
    by: str | None = None,
    *,
    partial: bool = False,
    mode: str = "spec",
    building: str | None = None,
) -> str:
    """One line of recalls/YYYY-MM.jsonl (RecallLine); a mode other than spec names itself. mode
    is the one that answered: while the configured one is being built (building), the spec's
    search answers in its stead, and the line says both ("mode": "spec", "building": its name)."""
    kept = [RecallHit.model_validate(h.source()) for h in hits]
    line = RecallLine(time=when, session=session, query=query, k=k, hits=kept)
    if by is not None:
        line.by = by
    if partial:
        line.partial = True
    if mode != "spec" or building is not None:
        line.mode = mode
    if building is not None:
        line.building = building
    return line.dump_line()


def _in_stead(live: object, mode: str) -> str | None:
    """mode, when live is the spec's search answering in its stead (Index.live while mode's
    tables are built); None when live is mode's own."""
    answering = getattr(live, "mode", None)
    if mode != "spec" and isinstance(live, Stateless) and getattr(answering, "name", "") == "spec":
        return mode
    return None


class Recaller:
    """Runs recall on an Index and writes the recall log (one line per recall, before the answer).

    Each recall takes a read connection from the index (Index.reader: pooled, held under the
    reindex swap's gate, a damaged file reported as IndexDamaged), searches in the index's recall
    mode, renders and labels the hits, and logs them. While the catch-up after a start runs, a line
    after the hits says how far it is, and the log line says partial; so they do while a log the
    catch-up tried stays out of the index (index.not_indexed), and when a session's recall is
    answered while notes.md changed since the index last read it (NOTES_CHANGED).
    """

    def __init__(self, index: Index):
        self.index = index
        self._lock = threading.Lock()
        self._log: RecallLog | None = None

    def recall(
        self, query: str, k: int = 5, *, session: str, by: str | None = None, behind: bool = False
    ) -> RecallResult:
        """At most k hits for query, rendered and labelled; appends the recall log line (with
        "by": "owner" for the owner's search, so the agent's hit counts leave it out). behind:
        answered without waiting for the writer to catch the index up with notes.md, which
        changed (recall/notesbehind.py): said after the hits while it is still so."""
        catching_up = self.index.catching_up
        # Asked before the search as well as after it: the index holds all of notes.md again
        # once its last part is committed, which may come after this search's snapshot and
        # before the look after it.
        earlier = self.index.meanwhile
        parsed = Query.parse(query)
        hits: list[Hit] = []
        building = self.index.building  # no search made: as the index stands
        if parsed.expression is not None:
            live = self.index.live  # refused before a connection is taken, while it is not ready
            building = _in_stead(live, self.index.mode)  # the search made: by what answered it
            with self.index.reader() as conn:
                # What forgets keep out, asked before the search and again after it: a forget
                # under way as the search began has every key it takes in the first (its record,
                # unfinished.py), though it may delete the rows the search read and let go of
                # its record before the second.
                before = keptout.hiding(self.index.home)
                hits = live.search(conn, parsed, k)
                gone = before | keptout.hiding(self.index.home)
                kept = _not_forgotten(hits, gone)
                if len(kept) < len(hits):  # rows a forget could not yet delete (a full disk)
                    kept = _not_forgotten(live.search(conn, parsed, 2 * k), gone)[:k]
                hits = kept
        not_indexed = len(self.index.not_indexed)
        meanwhile = self.index.meanwhile or earlier
        if behind and self.index.notes_behind is None and self.index.notes_seen.changed():
            meanwhile = NOTES_CHANGED if meanwhile is None else f"{meanwhile} {NOTES_CHANGED}"
        partial = catching_up is not None or not_indexed > 0 or meanwhile is not None
        self._append(session, query, k, hits, by, partial=partial, building=building)
        answer = result(query, hits)
        notes = [meanwhile] if meanwhile is not None else []
        if catching_up is not None:
            read, logs = catching_up
            notes.append(f"(the index is catching up: {read:,} of {logs:,} session logs read)")
        elif not_indexed:
            notes.append(
                f"({counted(not_indexed, 'session log')} not in the index yet: memoryd tries"
                " again; bxctl memory stats says why)"
            )
        if not notes:
            return answer
        return replace(answer, text="\n".join([answer.text, *notes]))

    def _append(
        self,
        session: str,
        query: str,
        k: int,
        hits: list[Hit],
        by: str | None,
        *,
        partial: bool,
        building: str | None = None,
    ) -> None:
        with self._lock:
            if self._log is None:
                self._log = RecallLog(self.index.home)
            recall_log = self._log
        mode = "spec" if building is not None else self.index.mode
        line = log_line(
            now_rfc3339(),
            session,
            query,
            k,
            hits,
            by,
            partial=partial,
            mode=mode,
            building=building,
        )
        recall_log.append(line)

    def close(self) -> None:
        """fsync the recall log and stop its thread (the index is closed by its owner)."""
        with self._lock:
            recall_log, self._log = self._log, None
        if recall_log is not None:
            recall_log.close()


__all__ = [
    "NOTES_CHANGED",
    "SEARCH",
    "SOURCE",
    "Hit",
    "Query",
    "RecallLog",
    "RecallResult",
    "Recaller",
    "log_line",
    "render",
    "result",
    "result_label",
    "search",
]
