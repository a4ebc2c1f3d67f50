"""The last step of a context or hybrid recall: from fused scores to the k hits, in order.

Three rules on top of the scores:
- What the agent did itself, its own `recall` and `memory` calls (rows of role call whose tool is
  one of SELF_TOOLS), never outranks what was said: they come after every other candidate. A
  recall call repeats a question's words exactly, and a memory call the words of what it stored,
  so by score alone they would come first and push out the turns themselves. For the same
  reason they are no turn's neighbours (context's neighbour column, hybrid's neighbour
  cosines: own_call_sql), or the turns beside them would come first in their place.
- A run of neighbours does not crowd out other sessions: the neighbour column makes adjacent
  turns score alike, so one session could fill the answer. Each pick lowers the score of the
  candidates within RUN records of it in its session by DAMP (a candidate near two picks by
  DAMP squared), and the next pick is the best of what is left (maximal marginal relevance with
  the session run as the similarity). A hit of another session that scores nearly as well
  passes the run's second and third rows. Context turns it off (context.DAMP): on the
  two-person shape it cost more recall, "all evidence" included, than it won.
- The spec's first rows, one per deadline (context five, hybrid four), are kept near the top
  (keep_spec), those it is sure of at their deadlines and the others at the end of the ten: what
  the spec finds first, the mode finds within ten, and the first two rows that stand out of the
  rest of the spec's ranking (sure) within five, a third by 7. A row the spec ranks first among
  near-equal ones (a name that every greeting holds) does not push out what the mode found. The
  spec's later rows compete on the mode's score alone: deadlines for all of them cost the modes
  their lead on the evaluations (BENCHMARKS.md).
"""

import sqlite3
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass

from memoryd.search import ties
from memoryd.search.hit import report_damaged

SELF_TOOLS = frozenset({"recall", "memory"})
DAMP = 0.95
RUN = 4
FREE = 0
# The spec is sure of a row (keep_spec) that scores SURE times the last row of its ranking read:
# a row standing out of a crowd of near-equal scores (a name every greeting holds), not one of
# the crowd.
SURE = 2.0
# For a question in a language the mode does not read (language.py: its stopwords and person are
# English), the spec's first four rows are in the top five whether the spec is sure of them or
# not: the mode's own ranking there is no better than the spec's, so at five it may add a row
# but not take one away.
UNREAD = (2, 3, 4, 5)
_SCORES = "SELECT rowid, -bm25(hits) FROM hits WHERE hits MATCH ? AND rowid = ?"
_INFO = (
    "SELECT s.rowid, s.session, s.record, s.kind, s.role, s.time,"
    " CASE WHEN s.role = 'call' THEN substr(h.text, 1, 16) END"
    " FROM sources s JOIN hits h ON h.rowid = s.rowid WHERE s.rowid IN ({})"
)


class SpecRanking(list[int]):
    """The spec's ranking, best first, and the rows of it the spec is sure of (None: all)."""

    def __init__(self, rowids: Iterable[int] = (), sure: frozenset[int] | None = None):
        super().__init__(rowids)
        self.sure = sure


def sure(
    conn: sqlite3.Connection,
    expression: str,
    rowids: list[int],
    depth: int,
    scores: Sequence[float] | None = None,
) -> frozenset[int] | None:
    """The rows of the spec's ranking (rowids, best first, depth read) scoring at least SURE
    times its last; None (all) when the ranking holds fewer than depth rows, so no crowd was
    cut. The scores are the spec's bm25 (-bm25, as its ranking gave them in scores, or FTS5's,
    one row at a time)."""
    if len(rowids) < depth:
        return None
    given = dict(zip(rowids, scores, strict=True)) if scores is not None else None

    def score(rowid: int) -> float:
        if given is not None:
            return given[rowid]
        found = conn.execute(_SCORES, (expression, rowid)).fetchone()
        return found[1] if found else 0.0

    floor = SURE * score(rowids[-1])
    out = []
    for rowid in rowids[:-1]:  # best first: the sure rows are a prefix
        if score(rowid) < floor or floor <= 0.0:
            break
        out.append(rowid)
    return frozenset(out)


@dataclass(frozen=True)
class Place:
    """Where a candidate row is: its session (None for a note), its record, whether it is the
    agent's own recall or memory call, its role (user, assistant, call; None for a note), and
    its kind and time, which order it among rows of equal score (search/ties.py)."""

    session: str | None
    record: int
    own_call: bool
    role: str | None = None
    kind: str | None = None
    time: str | None = None

    def tie_key(self, rowid: int) -> ties.Key:
        """The row's place among rows of equal score: the newer first, then what it is."""
        return ties.key(rowid, self.time, self.kind, self.session, self.record)


def own_call(role: str | None, text: str | None) -> bool:
    """A row of the agent's own recall or memory tool (rows of calls are "name arguments")."""
    return role == "call" and isinstance(text, str) and text.split(" ", 1)[0] in SELF_TOOLS


def own_call_sql(role: str, text: str) -> str:
    """own_call as an SQL expression over the columns role and text (names the caller's query
    gives, never input), for the queries that find a turn's neighbours: the agent's own calls
    are no turn's neighbours, or a turn beside a recall would hold the recall's words."""
    tests = " OR ".join(
        f"{text} = '{name}' OR substr({text}, 1, {len(name) + 1}) = '{name} '"
        for name in sorted(SELF_TOOLS)
    )
    return f"({role} = 'call' AND ({tests}))"


def places(conn: sqlite3.Connection, rowids: Iterable[int]) -> dict[int, Place]:
    wanted = list(dict.fromkeys(rowids))
    found: dict[int, Place] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        sql = _INFO.format(", ".join("?" * len(chunk)))
        for rowid, session, record, kind, role, time, head in conn.execute(sql, chunk):
            if type(record) is not int or not (session is None or isinstance(session, str)):
                report_damaged(conn, rowid, f"record {record!r:.40}, session {session!r:.40}")
                continue  # left out, as hit.from_source leaves it out of an answer
            found[rowid] = Place(
                session if kind == "session" else None,
                record,
                own_call(role, head),
                role,
                kind,
                time,
            )
    return found


def arrange(
    scores: dict[int, float],
    where: dict[int, Place],
    k: int,
    damp: float = DAMP,
    run: int = RUN,
    free: int = FREE,
) -> list[int]:
    """The k best rowids of scores (higher is better; equal scores the newer row first, then by
    what the row is: Place.tie_key, never by rowid, which a rebuilt index gives out in another
    order), the agent's own calls last, each pick damping its session run (the module
    docstring). Rows missing from where (deleted meanwhile) are left out."""
    said = [r for r in scores if r in where and not where[r].own_call]
    own = [r for r in scores if r in where and where[r].own_call]
    # Each row's position in the tie order, 0 first.
    tie = {r: n for n, r in enumerate(sorted(said + own, key=lambda r: where[r].tie_key(r)))}
    picked = _diverse(said, scores, where, k, damp, run, free, tie)
    if len(picked) < k:
        picked += _diverse(own, scores, where, k - len(picked), damp, run, free, tie)
    return picked


def _diverse(
    rowids: list[int],
    scores: dict[int, float],
    where: dict[int, Place],
    k: int,
    damp: float,
    run: int,
    free: int,
    tie: dict[int, int],
) -> list[int]:
    left = sorted(rowids, key=lambda r: (-scores[r], tie[r]))
    if damp >= 1.0:
        return left[:k]
    near = dict.fromkeys(left, 0)  # the picks within run records of the candidate
    factor = dict.fromkeys(left, 1.0)
    picked: list[int] = []
    while left and len(picked) < k:
        best = max(left, key=lambda r: (scores[r] * factor[r], -tie[r]))
        picked.append(best)
        left.remove(best)
        at = where[best]
        if at.session is None:
            continue
        for r in left:
            other = where[r]
            if other.session == at.session and abs(other.record - at.record) <= run:
                near[r] += 1
                if near[r] > free:
                    factor[r] *= damp
    return picked


def unread(deadlines: tuple[int, ...]) -> tuple[int, ...]:
    """keep_spec's deadlines for a question the mode does not read: UNREAD, then the mode's own
    for the rows after."""
    return UNREAD + deadlines[len(UNREAD) :]


def keep_spec(
    order: list[int],
    spec: list[int],
    where: dict[int, Place],
    deadlines: tuple[int, ...],
    k: int,
    sure: Container[int] | None = None,
    late: bool = True,
) -> list[int]:
    """order with the spec's own best rows moved up: the spec's i-th best (the agent's own
    calls aside) is at position deadlines[i] or better (1-based), earlier where order has it
    earlier. When sure is given, a row not in it is kept only at the end of the deadlines (the
    i-th of n rows by position max(deadlines) - n + 1 + i, when that is later than its own), or
    not kept at all when late is False. So what the spec finds at its first ranks the mode
    finds too, and the first j of the list for k are the list for any j < k."""
    if sure is None:
        sure = getattr(spec, "sure", None)
    kept = [r for r in spec if r in where and not where[r].own_call][: len(deadlines)]
    last, n = max(deadlines, default=0), len(kept)
    due = []
    for i, (deadline, rowid) in enumerate(zip(deadlines, kept, strict=False)):
        if sure is None or rowid in sure:
            due.append((deadline, rowid))
        elif late:
            due.append((max(deadline, last - n + 1 + i), rowid))
    out: list[int] = []
    placed: set[int] = set()
    following = iter(order)
    while len(out) < k:
        waiting = sorted((deadline, i) for i, (deadline, r) in enumerate(due) if r not in placed)
        # A kept row goes in now when the rows due by some position could not all be placed by
        # it otherwise (two may share a deadline: a late one and one the spec is sure of), the
        # one due first; until then order's own rows come first.
        urgent = any(j + 1 >= deadline - len(out) for j, (deadline, _) in enumerate(waiting))
        late_row = due[waiting[0][1]][1] if urgent else None
        pick = (
            late_row
            if late_row is not None
            else next((r for r in following if r not in placed), None)
        )
        if pick is None:
            pick = next((r for _, r in due if r not in placed), None)
            if pick is None:
                break
        out.append(pick)
        placed.add(pick)
    return out
