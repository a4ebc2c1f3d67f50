"""The index rows that carry a text forget is asked to forget, wherever they came from.

An entry or a note is written by a memory call, and the session record of that call (indexed as
"memory {arguments}") holds its text as well; so may a recall call's query, or a message the text
was said in. Each such row is found through the full-text index (the text's words as one phrase,
in both ways a JSON writer may spell it), then judged by matching.row_holds, and named by its key
(session:ID:N, note:N): the key goes to forgotten.jsonl and the record's rows leave the index, as
for a record the owner names. A text without a word the full-text index keeps is looked for by a
scan of the rows instead. The phrase is the text's first PHRASE_CHARS characters at most (its last
word taken as a prefix): a row that holds the text holds them, matching.row_holds judges the rest,
and FTS5's memory grows with a phrase's words (a note of megabytes as one phrase took gigabytes).
The session logs that grew past what the index read are caught up
first (behind, catch_up_part, a part per writer job: forget.py): a memory call's record is often
still unindexed when its entry is forgotten, and would otherwise come in after the forget.
"""

import json
import logging
import os
import re
import sqlite3
import stat
from pathlib import Path

from memoryd.data import matching
from memoryd.errors import AdminRefused, IndexDamaged, IndexUnwritable, SessionUnknown
from memoryd.home import tree_size as _tree_size
from memoryd.index import indexer
from memoryd.journal import forgotten
from proto.trim import trim

log = logging.getLogger(__name__)

# The rows of one record are inserted together, under consecutive rowids: they are looked for
# this far either side of the row found.
RECORD_SPAN = 1024
WORD = re.compile(r"\w")
# Each session's baseline, beside its log (loopd-shim writes it once at the session's start).
BASELINE = "0.baseline.json"
SELECT = (
    "SELECT s.rowid, s.kind, s.session, s.record, s.role, h.text FROM hits h"
    " JOIN sources s ON s.rowid = h.rowid"
)


# What of a text the full-text phrase holds at most: far more than makes a text's rows few.
PHRASE_CHARS = 2048


def _phrase(text: str) -> str:
    if len(text) <= PHRASE_CHARS:
        return '"' + text.replace('"', '""') + '"'
    # The first words only, the last one perhaps cut: matched as a prefix.
    return '"' + text[:PHRASE_CHARS].replace('"', '""') + '" *'


# Rows added past a rowid; the rows of some sessions (find_since).
SINCE = "h.rowid > ?"
OF_SESSIONS = "s.kind = 'session' AND s.session IN (SELECT value FROM json_each(?))"


def _candidates(conn: sqlite3.Connection, text: str, within: tuple[str, tuple] = ("", ())):
    """The rows that may hold text; within: a further condition on them (fixed text) and its
    bound values."""
    text = trim(text)
    head = text[: PHRASE_CHARS + 1]  # past PHRASE_CHARS, _phrase takes the first words only
    more, params = within
    more = f" AND {more}" if more else ""
    if not WORD.search(head[:PHRASE_CHARS]):
        sql = f"{SELECT} WHERE instr(h.text, ?) > 0{more}"  # noqa: S608 (fixed text)
        yield from conn.execute(sql, (head, *params))
        return
    spelt = {head, json.dumps(head)[1:-1]}  # as written, and with JSON's \u escapes
    for form in sorted(spelt):
        sql = f"{SELECT} WHERE hits MATCH ?{more}"  # noqa: S608 (fixed text)
        yield from conn.execute(sql, (_phrase(form), *params))


def key_of(kind: str, session: str | None, record: int) -> str | None:
    if kind == "session" and isinstance(session, str):
        key = forgotten.session_key(session, record)
    elif kind in matching.NOTE_KINDS:
        key = forgotten.note_key(record)
    else:
        return None
    return key if forgotten.KEY.match(key) else None


def find(index, texts: list[str]) -> dict[str, list[int]]:
    """key -> the rowids of its record, for every record whose rows hold one of texts."""
    return _found(index, texts, [("", ())])


def find_since(index, texts: list[str], last: int, sessions: set[str]) -> dict[str, list[int]]:
    """find() within the rows past rowid last and the rows of sessions (carrierseen.py): the
    full-text index reads only those past last, the sessions' rows among every match."""
    within: list[tuple[str, tuple]] = [(SINCE, (last,))]
    if sessions:
        within.append((OF_SESSIONS, (json.dumps(sorted(sessions)),)))
    return _found(index, texts, within)


def _found(index, texts: list[str], within: list[tuple[str, tuple]]) -> dict[str, list[int]]:
    found: dict[str, int] = {}  # key -> the row found holding a text
    with index.reader() as conn:
        for text, part in ((t, w) for t in texts for w in within):
            if not trim(text):
                continue
            for rowid, kind, session, record, role, row in _candidates(conn, text, part):
                if not isinstance(row, str) or not isinstance(record, int):
                    continue
                key = key_of(kind, session, record)
                if key is None or key in found or not matching.row_holds(role, row, text):
                    continue
                found[key] = rowid
        rows = _record_rows(conn, found)
    return {key: sorted(rows[key] | {rowid}) for key, rowid in found.items()}


def _record_rows(conn: sqlite3.Connection, found: dict[str, int]) -> dict[str, set[int]]:
    """key -> its rows within RECORD_SPAN of the row found (found[key]). The spans are read in
    ranges of rowids, those that overlap merged, each once: a text 40,000 records hold took
    a query of its 2,049 rowids per record (20 s), where one read of the rows between is a
    fraction of that."""
    rows: dict[str, set[int]] = {key: set() for key in found}
    listed = forgotten.condition(set(found))
    if listed is None:
        return rows
    where, params = listed
    span = "SELECT rowid, kind, session, record FROM sources WHERE rowid BETWEEN ? AND ?"
    sql = f"{span} AND ({where})"  # fixed text, bound values
    for low, high in _ranges(sorted(found.values())):
        for rowid, kind, session, record in conn.execute(sql, (low, high, *params)):
            key = key_of(kind, session, record)
            if key in found and abs(rowid - found[key]) <= RECORD_SPAN:
                rows[key].add(rowid)
    return rows


def _ranges(rowids: list[int]) -> list[tuple[int, int]]:
    """The rowids within RECORD_SPAN of any of rowids (sorted), as ranges that do not overlap."""
    ranges: list[tuple[int, int]] = []
    for rowid in rowids:
        low, high = rowid - RECORD_SPAN, rowid + RECORD_SPAN
        if ranges and low <= ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], max(ranges[-1][1], high))
        else:
            ranges.append((low, high))
    return ranges


def read_and_held(index) -> list[tuple[str, int | None, int]]:
    """Each session log's (session, bytes the index read of it or None, its size now); a log
    that cannot be looked at is left out (a read: any thread)."""
    with index.reader() as conn:
        done = dict(conn.execute("SELECT log, bytes FROM offsets"))
    out = []
    base = os.fspath(index.home.sessions)
    for session in index.sessions():
        try:
            size = os.stat(f"{base}/{session}/0.jsonl", follow_symlinks=False).st_size
        except OSError:
            continue
        out.append((session, done.get(indexer.log_name(session)), size))
    return out


def sessions_bytes(sessions: Path, held: list[tuple[str, int | None, int]]) -> int:
    """What the files under sessions/ take, from held (read_and_held: each log's size, looked at
    once for stats' unread list as well): a session's folder holds its log and its baseline
    (0.baseline.json, written once at its start and often larger than the log), so one more stat
    a session; a folder without a log held (a baseline alone, a log skipped, a misnamed folder)
    is walked whole. Walking every folder of a home of tens of thousands of sessions costs about
    three times as much. Links are not followed nor counted, as stats counts no link elsewhere."""
    logs = {session: size for session, _, size in held}
    total = 0
    try:
        with os.scandir(sessions) as it:
            for item in it:
                if item.is_file(follow_symlinks=False):
                    total += item.stat(follow_symlinks=False).st_size
                elif not item.is_dir(follow_symlinks=False):
                    continue
                elif item.name in logs:
                    total += logs[item.name] + _size(f"{item.path}/{BASELINE}")
                else:
                    total += _tree_size(item.path)
    except OSError:
        pass
    return total


def _size(path: str) -> int:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return 0
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


def behind(index) -> list[str]:
    """The sessions whose log holds bytes the index has not read, or fewer than it read (a log
    rewritten): catch-up reads each again (a read: any thread)."""
    return [session for session, read, size in read_and_held(index) if size != read]


def catch_up_part(index, session: str) -> bool:
    """On the writer: index one part of what a session's log holds past what the index read
    (index.catch_up_session_part); True once the log is read to its end, or skipped (a log that
    cannot be read is left, as the background catch-up leaves it). AdminRefused when the index
    cannot take it (a full disk): a record left out now would come in later, after the forget."""
    try:
        _, done = index.catch_up_session_part(session)
    except (OSError, SessionUnknown) as error:
        log.warning("session log %s: skipped: %s", index.home.session_log(session), error)
        return True
    except (IndexDamaged, IndexUnwritable, sqlite3.Error) as error:
        cause = error.__context__ if isinstance(error.__context__, sqlite3.Error) else error
        raise AdminRefused(
            f"refused: forget could not start: the index cannot take the new records of "
            f"session {session} first ({cause}); nothing was forgotten"
        ) from None
    return done
