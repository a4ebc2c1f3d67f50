"""Which index rows a forget keeps out, and by what: its keys, or the digests of what it took.

forgotten.jsonl lists a forget's keys (session:ID:N, note:N) and the digests of the texts it took.
A key alone would drop whatever a record under that number says, and a new log of the same session
name (a move to a new machine, old logs cleared) reuses the numbers; so a key drops a row whatever
its text only where nothing else can (hiding(): the keys alone() vouches for no digest of, and
every key of a forget not finished, listed yet or not), and the rows of the other keys go when they
hold a forgotten text (held_under_key). Recall (recaller.py), a rebuilt index's swap (newindex.py),
a restore (purge.py) and the indexer (indexer.py) ask here, so they agree on what stays out.
"""

import hashlib
import json
import sqlite3
from collections.abc import Callable

from memoryd.data import matching, unfinished
from memoryd.errors import AdminRefused
from memoryd.home import Home
from memoryd.journal import forgetcuts
from memoryd.journal.forgotten import alone, condition, digests, keys
from proto.trim import WHITE_SPACE


def hiding(home: Home) -> frozenset[str]:
    """The keys whose rows are left out whatever their text: those in force (keys()) that alone()
    vouches for no digest of, and every key of a forget not finished (unfinished.py: a full disk
    or a kill may have stopped it before it listed them, or before the index let go of the rows).
    The others' rows are left out by the digests of what they held, so a new log of the same
    session name is recalled under those numbers. A forget's record that cannot be
    read counts as a forget not finished that took every key."""
    in_force = keys(home)
    try:
        stopped = unfinished.read(home)
    except AdminRefused:
        return in_force
    unvouched = in_force & alone(home)
    if stopped is None:
        return unvouched
    # All of the unfinished forget's keys, listed in forgotten.jsonl yet or not: it records them
    # before its first write, and a kill may come before it lists them (the note already gone
    # from notes.md, the call that wrote it still in the index).
    return unvouched | frozenset(stopped.keys)


_HELD_ROWS = (
    "SELECT s.rowid, s.role, h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
    " WHERE s.rowid IN (SELECT rowid FROM sources WHERE {})"
)


def rows_condition(conn: sqlite3.Connection, home: Home) -> tuple[str, tuple] | None:
    """The index's rows a forget keeps out, as one WHERE clause on sources (condition()): every
    row of hiding()'s keys, and each row of the other keys in force that holds a forgotten text
    (matching.holds_forgotten), such as a row a rebuild read before a forget took it; a new log's
    record under such a key stays. Reads the rows of those keys (a forget's few), on the caller's
    connection; None when there are none."""
    hidden = hiding(home)
    parts = [c for c in (condition(hidden),) if c is not None]
    rest = condition(keys(home) - hidden)
    if rest is not None:
        texts = digests(home)
        found = conn.execute(_HELD_ROWS.format(rest[0]), rest[1])  # fixed text, bound values
        held = [r for r, role, text in found if held_under_key(role, text, texts)]
        if held:
            parts.append(("rowid IN (SELECT value FROM json_each(?))", (json.dumps(held),)))
    if not parts:
        return None
    return " OR ".join(f"({c})" for c, _ in parts), tuple(p for _, ps in parts for p in ps)


LEAST_CUT = forgetcuts.LEAST_CUT


def held_under_key(role: str | None, text: str, texts: frozenset[str]) -> bool:
    """A row of a key in force that alone() does not name holds what its forget took: a text
    whose digest is listed (matching.holds_forgotten), or one that begins with such a text as a
    row cut at another max_record_bytes held it (the forget took the row as the index then cut
    it: raising the cap later must not bring the rest, nor the part it took, back)."""
    return matching.holds_forgotten(role, text, texts) or _extends(text, texts)


def _extends(text: str, texts: frozenset[str]) -> bool:
    """True when a prefix of text at least LEAST_CUT bytes long is a listed text (by digest,
    surrounding white space aside as forgetlines.digests_of takes it: White_Space, and for a
    text an older memoryd trimmed with str.strip() that way too). One pass per way of trimming
    that differs: the digest of each prefix is taken from a copy of the running hash."""
    if not texts:
        return False
    start = text.lstrip(WHITE_SPACE)
    if _prefix_listed(start, texts, WHITE_SPACE.__contains__):
        return True
    # Where both trims leave the same start, the prefixes str.strip() ends at are among those
    # already looked at (each ends in a character that is not White_Space either).
    older = text.lstrip()
    return older != start and _prefix_listed(older, texts, str.isspace)


def _prefix_listed(data: str, texts: frozenset[str], space: Callable[[str], bool]) -> bool:
    if len(data) < LEAST_CUT // 4:
        return False
    running = hashlib.sha256()
    size = 0
    for char in data:
        piece = char.encode("utf-8", "surrogatepass")
        running.update(piece)
        size += len(piece)
        if size >= LEAST_CUT and not space(char) and running.copy().hexdigest() in texts:
            return True
    return False
