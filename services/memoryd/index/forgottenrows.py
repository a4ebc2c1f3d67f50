"""What the owner made memoryd forget, kept out of the rows a session log's reading gives.

A forget lists the keys it took in forgotten.jsonl, and the digests of the text it took: neither
is ever indexed again, whichever reading meets it (a log read on, or read again from its start).
Kept apart from the reading (indexer.py) as the one filter both kinds of reading pass rows through.
"""

from collections.abc import Iterable

from memoryd.data import matching
from memoryd.home import Home
from memoryd.index.sessionrows import Row
from memoryd.index.settings import Settings
from memoryd.journal import forgotten, keptout


def kept(rows: Iterable[Row], home: Home, session: str, settings: Settings) -> Iterable[Row]:
    """rows less what the owner made memoryd forget, which is never indexed again. A row under a
    key forgotten.jsonl lists goes whatever its text when the forget listed no digest of what it
    took; else when it holds what was taken, cut at this cap or another (forgotten_key): what a
    new log of the same session name says under that number is indexed."""
    skip, alone = forgotten.listed(home), forgotten.alone(home)
    if skip:
        cap = settings.max_record_bytes
        rows = (r for r in rows if not forgotten_key(session, r, skip, alone, home, cap))
    texts = forgotten.digests(home)  # nor its text, in any record of any log
    if texts:
        most = settings.max_record_bytes
        rows = (r for r in rows if not matching.holds_forgotten(r[5], r[8], texts, most))
    return rows


def forgotten_key(
    session: str, row: Row, listed: frozenset[str], alone: frozenset[str], home: Home, cap: int
) -> bool:
    """A row under a key forgotten.jsonl lists that its forget took (keptout.held_under_key),
    or that the cap cut: under a lower cap than the forget's, its digest is of no text taken."""
    key = forgotten.session_key(session, row[3])
    if key not in listed:
        return False
    if key in alone or len(row[8].encode("utf-8", "surrogatepass")) >= cap - 3:
        return True
    return keptout.held_under_key(row[5], row[8], forgotten.digests(home))
