"""What a forget takes, beyond the text its id names, and where it finds it.

A session record's texts are its rows as the index holds them and what each of its tool calls
wrote (a recall's query, a memory call's text): each stands alone elsewhere (the recall log, a
memory file) and in later logs' records, so a forget of the record takes them all, and their
digests keep them out of the index from every log. A text holding a NUL is found by a scan, never
by the full-text index, whose query syntax cannot carry one.
"""

import json

from memoryd.data import carriers, matching, unfinished
from memoryd.data.places import Find, Places, places
from memoryd.data.purge import rows_of_keys
from memoryd.data.targets import SESSION, Stopped, Target, resolve, where_held
from memoryd.errors import AdminRefused
from memoryd.journal import forgotten
from proto.trim import trim


def target(
    service, ref: str, hints: dict | None = None, stopped: Stopped = unfinished.read
) -> Target:
    """What ref names (targets.resolve). A session record's texts are its rows as the index holds
    them and what each row says in its own words (matching.call_wrote): a tool call's row is "name
    arguments", and what the call wrote stands alone elsewhere (a recall's query in the recall
    log, a memory call's text in a file) and in later logs' records, so the forget takes it too,
    and its digest keeps it out of the index from every log. A text holding a NUL names no id,
    and is looked for without the full-text index (where). stopped: the forget that stopped part
    way, if any (resolve)."""
    store = service.store
    if "\0" in ref:
        try:
            return resolve(store.home, None, store.journal, ref, hints, stopped)
        except AdminRefused:
            if not _scanned(service.index, [trim(ref)]):
                raise
        return Target("text", "the text given", [trim(ref)])
    target = resolve(store.home, service.index, store.journal, ref, hints, stopped)
    if target.resumed or not SESSION.match(ref):
        return target  # a resumed forget takes the texts it recorded, no more
    key = target.keys[0]
    written = [
        text
        for role, row in _record_rows(service.index, key, (hints or {}).get(key, []))
        for text in matching.call_wrote(role, row)
        if trim(text)
    ]
    target.texts = list(dict.fromkeys([*target.texts, *written]))
    return target


_ROWS = "SELECT s.role, h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
_OF_RECORD = "s.kind = 'session' AND s.session = ? AND s.record = ?"


def _record_rows(index, key: str, rowids: list[int]) -> list[tuple[str | None, str]]:
    """(role, text) of the index rows of session key: by the rowids found before when they still
    hold it (no scan on the writer), else by a scan, in rowid order."""
    session, _, record = key.removeprefix("session:").rpartition(":")
    params = (session, int(record))
    with index.reader() as conn:
        if rowids:
            marks = ",".join("?" * len(rowids))
            sql = f"{_ROWS} WHERE s.rowid IN ({marks}) AND {_OF_RECORD} ORDER BY s.rowid"
            rows = conn.execute(sql, (*rowids, *params)).fetchall()  # noqa: S608 (fixed text)
            if len(rows) == len(rowids):
                return rows
        sql = f"{_ROWS} WHERE {_OF_RECORD} ORDER BY s.rowid"  # noqa: S608 (fixed text)
        return conn.execute(sql, params).fetchall()


def where(service, target: Target, find: Find | None = None) -> Places:
    """Where target's texts are held (targets.where_held); find: how the index rows holding them
    are found (find(index, texts): what prepare found, carrierseen.py; else carriers.find). A
    text holding a NUL is never given to the full-text index: FTS5's query syntax ends a string at
    a NUL, so SQLite refuses the query (and a reader takes a refused query for a damaged index);
    its rows are found by a scan (_scanned) and the files are searched for it as for any text."""
    held = [t for t in target.texts if "\0" in t]
    if not held:
        return where_held(service, target, find)
    store = service.store
    where = places(store.home, store.journal, target.texts, target.keys, None)
    rows = (find or carriers.find)(service.index, [t for t in target.texts if "\0" not in t])
    for key, rowids in _scanned(service.index, held).items():
        rows.setdefault(key, rowids)
    own = set(target.keys) | {forgotten.note_key(n) for n in where.notes}
    where.rows = rows
    where.records = {k: v for k, v in rows.items() if k not in own}
    return where


def _scanned(index, texts: list[str]) -> dict[str, list[int]]:
    """key -> its rowids, for every record whose rows hold one of texts (matching.row_holds),
    found by a scan of the rows for the text as written and as JSON escapes it (in a call's
    arguments)."""
    holding: dict[str, None] = {}
    with index.reader() as conn:
        for text in texts:
            spelt = {trim(text), json.dumps(trim(text))[1:-1]}
            for form in sorted(spelt):
                sql = f"{carriers.SELECT} WHERE instr(h.text, ?) > 0"  # noqa: S608 (fixed text)
                for _, kind, session, record, role, row in conn.execute(sql, (form,)).fetchall():
                    key = carriers.key_of(kind, session, record)
                    if key is None or key in holding or not isinstance(row, str):
                        continue
                    if matching.row_holds(role, row, text):
                        holding[key] = None
        rows = rows_of_keys(conn, holding) if holding else {}  # one pass, not a scan a key
    return {key: rows.get(key, []) for key in holding}
