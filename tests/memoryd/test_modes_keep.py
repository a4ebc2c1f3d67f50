"""Through a real index in context mode: the spec's best rows are where keep_spec says, those
the spec is sure of (arrange.sure) by their deadline, the others by the end of the ten."""

import random
import sqlite3

import pytest

from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.modes import arrange, context
from memoryd.search.query import Query
from tests.memoryd.test_reindex import append, random_records
from tests.recalling import recall_on

WORDS = ["launch", "window", "march", "notes", "lisbon", "utc", "release", "cat", "miso"]
# The spec's ranking, equal scores the newer row first, then by what the row is (search/ties.py).
PLAIN = (
    "SELECT h.rowid FROM hits h JOIN sources s ON s.rowid = h.rowid WHERE hits MATCH ?"
    " ORDER BY h.rank, s.time DESC, s.kind, s.session, s.record, h.rowid LIMIT ?"
)
KEY = "SELECT kind, session, record, role FROM sources WHERE rowid = ?"


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_context_keeps_the_spec_rows_by_their_deadlines(tmp_path, seed):
    rng = random.Random(seed)
    home = Home(tmp_path / "home")
    for n in range(5):
        append(home, f"mm-{n}", random_records(rng, 60))
    index = Index(home, mode="context", max_class="secret")
    index.open()
    index.catch_up_all()
    conn = sqlite3.connect(home.index_db)
    checked = 0
    try:
        for _ in range(25):
            question = " ".join(rng.sample(WORDS, rng.randint(1, 4)))
            query = Query.parse(question)
            spec = [r for (r,) in conn.execute(PLAIN, (query.expression, context.SPEC_DEPTH))]
            sure = arrange.sure(conn, query.expression, spec, context.SPEC_DEPTH)
            where = arrange.places(conn, spec)
            kept = [r for r in spec if not where[r].own_call][: len(context.KEEP_SPEC)]
            hits = recall_on(index, question, k=10, session="mm-q").hits
            found = [(h.kind, h.session, h.record, h.role) for h in hits]
            last, n = context.KEEP_SPEC[-1], len(kept)
            for i, (deadline, rowid) in enumerate(zip(context.KEEP_SPEC, kept, strict=False)):
                if sure is not None and rowid not in sure:
                    deadline = max(deadline, last - n + 1 + i)
                if deadline <= len(found):
                    assert found.index(conn.execute(KEY, (rowid,)).fetchone()) < deadline
                    checked += 1
    finally:
        conn.close()
        index.close()
    assert checked
