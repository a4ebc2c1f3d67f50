"""bxctl memory forget ID: the owner makes memoryd forget a note, an entry or a session record.

ID is note:N (as search prints it), memory.md:N or user.md:N (the Nth entry of the file now, from
1), session:ID:N (record N of a session's log, as search prints it), or exact text: an entry's, a
note's, a recall query's or a pending write's, or the text of a record the index holds.
What is forgotten is that text exactly (surrounding whitespace aside), wherever a value that
carries what was written holds it (matching.py): never a longer text that merely contains it,
never a field that says how something was written. It is removed from every place memoryd holds
it (places.py), on the writer thread: first the files (an entry of memory.md or user.md equal to
it is removed by an owner's edit, action "forget", whose journal line holds the marker where the
text was; a note equal to it keeps its header and gets the marker, notes.md rewritten
atomically), then the journal's older copies, the recall log's queries, pending writes and the
exports left in backups/ (scrub.py), then the keys of every record that held it (the one named,
and any other record the index holds it in, such as the session record of the memory call that
wrote it: carriers.py) go to forgotten.jsonl, so that no catch-up, reindex or swap of a rebuilt
index puts it back, and their rows leave the index (purge.py). The files come first so that the
journal never says less than the files hold (the hand-edit check compares them). A forget stopped
by a crash part way is finished by running it again: by the same id while the id still names
something, else by the text's exact words, which forget takes for any text memoryd still holds.
The journal says what was forgotten by id and when, never the text. It cannot be undone (undo says
why), and session logs, which are loopd's, keep their text: the answer says so. Archives in
backups/ are not opened: the answer names them.
"""

import datetime as dt
import hashlib
import logging
import os
import re
from dataclasses import dataclass, field

from memoryd.data import carriers, exchange, layout, matching, recalllog, scrub
from memoryd.data.places import Places, notes_of, places, recall_months
from memoryd.data.purge import purge, reset_tail, rows_of, shift_notes
from memoryd.errors import AdminRefused
from memoryd.home import Home, atomic_write, read_file
from memoryd.journal import forgotten
from memoryd.journal.journal import IDENTITY_FILES, Edit
from memoryd.memory import edits, notes
from memoryd.memory.memfiles import read_entries
from memoryd.trust.caller import OWNER
from memoryd.writer import WRITE
from proto.messages import SESSION_ID_PATTERN
from proto.plural import counted

log = logging.getLogger(__name__)

NOTE = re.compile(r"^note:(\d{1,9})\Z")
ENTRY = re.compile(r"^(memory\.md|user\.md):(\d{1,4})\Z")
SESSION = re.compile(rf"^session:({SESSION_ID_PATTERN.strip('^$')}):(\d{{1,12}})\Z")
LOGS_STAY = (
    "Session logs are loopd's and stay as they are: what was said in a session stays in its log "
    "under sessions/, and memoryd will not index it again."
)


@dataclass
class Target:
    id: str
    what: str  # said to the owner, without the text
    texts: list[str]
    keys: list[str] = field(default_factory=list)


def _session_texts(index, session: str, record: int, rowids: list[int]) -> list[str]:
    """The indexed texts of a session record: by the rowids found before when they still hold
    it (no scan on the writer), else by a scan."""
    where = "s.kind = 'session' AND s.session = ? AND s.record = ?"
    with index.reader() as conn:
        if rowids:
            marks = ",".join("?" * len(rowids))
            rows = conn.execute(
                "SELECT h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
                f" WHERE s.rowid IN ({marks}) AND {where} ORDER BY s.rowid",  # noqa: S608
                (*rowids, session, record),
            ).fetchall()
            if len(rows) == len(rowids):
                return [r[0] for r in rows]
        rows = conn.execute(
            "SELECT h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
            f" WHERE {where} ORDER BY s.rowid",  # noqa: S608
            (session, record),
        ).fetchall()
    return [r[0] for r in rows]


def resolve(home: Home, index, journal, ref: str, hints: dict | None = None) -> Target:
    """What ref names, with its text(s); AdminRefused when it names nothing to forget."""
    m = NOTE.match(ref)
    if m:
        number = int(m.group(1))
        for note in notes_of(home):
            if note.number == number:
                what = f"{ref} ({note.kind} {note.time} in session {note.session})"
                if forgotten.is_marker(note.text):
                    if forgotten.note_key(number) in forgotten.keys(home):
                        raise AdminRefused(f"refused: {ref} is already forgotten")
                    # A forget stopped before it listed the key: finish it.
                    return Target(ref, what, [], [forgotten.note_key(number)])
                return Target(ref, what, [note.text])
        raise AdminRefused(f"refused: notes.md holds no note {ref}")
    m = ENTRY.match(ref)
    if m:
        file, number = m.group(1), int(m.group(2))
        current = read_entries(home, file)
        if not 1 <= number <= len(current):
            raise AdminRefused(
                f"refused: {file} holds {len(current)} entries, not an entry {number}"
            )
        return Target(ref, f"entry {number} of {file}", [current[number - 1]])
    m = SESSION.match(ref)
    if m:
        session, record = m.group(1), int(m.group(2))
        key = forgotten.session_key(session, record)
        texts = _session_texts(index, session, record, (hints or {}).get(key, []))
        if key in forgotten.keys(home) and not texts:
            raise AdminRefused(f"refused: {ref} is already forgotten")
        if not texts:
            raise AdminRefused(
                f"refused: the index holds no record {record} of session {session} "
                "(name it as search prints it)"
            )
        return Target(ref, f"record {record} of session {session}", texts, [key])
    text = ref.strip()
    for file in IDENTITY_FILES:
        if text in read_entries(home, file):
            return Target("entry", f"an entry of {file}", [text])
    # Any other exact text memoryd still holds (an entry removed long ago that the journal keeps,
    # a record the index holds, or what a forget stopped by a crash left behind) can be
    # forgotten by its words.
    if text and places(home, journal, [text], [], index).anything():
        return Target("text", "the text given", [text])
    raise AdminRefused(
        f"refused: {ref[:64]!r} names nothing to forget: give note:N, memory.md:N, user.md:N, "
        "session:ID:N (as search prints them) or an entry's or a note's exact text"
    )


def where_held(service, target: Target) -> Places:
    store = service.store
    return places(store.home, store.journal, target.texts, target.keys, service.index)


def check_of(texts: list[str]) -> str:
    """What the owner was shown, so that the forget acts on that and nothing else. It travels to
    bxctl and back within one command and is never stored."""
    return hashlib.sha256("\0".join(texts).encode()).hexdigest()


def preview(service, ref: str) -> dict:
    """What forget would do (a read): where the text is, and the text itself for the owner to
    see before saying yes (bxctl prints it escaped); the message holds no text."""
    store = service.store
    _caught_up(service)
    target = resolve(store.home, service.index, store.journal, ref)
    where = where_held(service, target)
    message = (
        f"forget {target.what}? Its text would go from {where.said()} and the index"
        f"{where.index_said()}; "
        f"this cannot be undone. {LOGS_STAY}"
    )
    return {
        "id": target.id,
        "what": target.what,
        "texts": target.texts,
        "check": check_of(target.texts),
        "places": where.said(),
        "message": message,
    }


@dataclass
class Found:
    """What forget finds on a reader before it takes the writer: the index rows of each key it
    will list (finding them scans the index; deleting them by rowid does not), and each journal
    month that holds the text, rewritten up to its end then (scrub.prepare)."""

    stamp: str  # the marker's time
    rows: dict[str, list[int]] = field(default_factory=dict)
    months: dict[tuple[str, str], scrub.Prepared] = field(default_factory=dict)

    def drop(self) -> None:
        for prepared in self.months.values():
            prepared.drop()
        self.months = {}


def prepare(service, ref: str) -> Found:
    """Found for ref; the caller drops it once the forget ran (or failed)."""
    store = service.store
    _caught_up(service)
    target = resolve(store.home, service.index, store.journal, ref)
    where = where_held(service, target)
    keys = target.keys + [forgotten.note_key(n) for n in where.notes]
    found = Found(stamp_of(store.now()))
    marker = forgotten.marker(found.stamp)
    found.rows = dict(where.rows)
    with service.index.reader() as conn:
        found.rows.update({key: rows_of(conn, key) for key in keys if key not in where.rows})
    try:
        for text in target.texts:
            change = _journal_change(text, marker)
            for path in store.journal.month_files():
                prepared = scrub.prepare(path, text, change, scrub.journal_dumps)
                if prepared is not None:
                    found.months[(str(path), text)] = prepared
    except BaseException:
        found.drop()
        raise
    return found


def _caught_up(service) -> None:
    """On a reader: the index caught up with the session logs first (on the writer), so that a
    record already written but not yet indexed is found and forgotten too."""
    late = carriers.behind(service.index)
    if late:
        service._writer.submit(WRITE, carriers.catch_up, service.index, late).result()


def _caught_up_here(index) -> None:
    """On the writer: the same catch-up, for a forget run without prepare()."""
    carriers.catch_up(index, carriers.behind(index))


def stamp_of(when: dt.datetime) -> str:
    return f"{when.astimezone(dt.UTC):%Y-%m-%dT%H:%MZ}"


def _journal_change(text: str, marker: str):
    return lambda value: matching.journal_change(value, text, marker)


def run(service, ref: str, found: Found | None = None, check: str | None = None) -> dict:
    """Forget ref (on the writer thread); found: prepare()'s, just before; check: the
    preview's, when the owner was shown what ref named."""
    store = service.store
    home: Home = store.home
    with store.lock:
        store.detect_hand_edits()
    _caught_up_here(service.index)
    found = found or Found(stamp_of(store.now()))
    target = resolve(home, service.index, store.journal, ref, found.rows)
    if check is not None and check != check_of(target.texts):
        raise AdminRefused(
            f"refused: {ref[:64]} no longer names what you were shown (memory changed meanwhile); "
            "nothing was forgotten: run forget again"
        )
    where = where_held(service, target)
    when = store.now().astimezone(dt.UTC)
    stamp = found.stamp
    marker = forgotten.marker(stamp)
    forgot = {"id": target.id, "at": stamp}
    edit_ids = []
    for file in where.entries:
        record = store.owner_edit(
            file, _without(target.texts, file, marker), OWNER, "forget", {"forgot": forgot}
        )
        if record is not None:
            edit_ids.append(record.id)
    shifts: list[tuple[int, int]] = []
    if where.notes:
        shifts = _mark_notes(home, where.notes, marker)
        target.keys += [forgotten.note_key(n) for n in where.notes]
    if not edit_ids:
        line = store.journal.append(
            when,
            Edit.model_validate(
                {
                    "session": "owner",
                    "call": None,
                    "taint": None,
                    "untrusted": False,
                    "action": "forget",
                    "file": None,
                    "to": "notes.md" if where.notes else None,
                    "before": [],
                    "after": [],
                    "notes": [],
                    "forgot": forgot,
                }
            ),
        )
        edit_ids.append(line.id)
    for text in target.texts:
        _scrub(service, store.journal, text, marker, found)
    # Every other record that held it (the memory call that wrote it) is forgotten too.
    target.keys += [key for key in where.records if key not in target.keys]
    listed = forgotten.keys(home)
    for key in target.keys:
        if key not in listed:
            forgotten.add(home, key, stamp, edit_ids[-1])
    reset_tail(store)
    purge(service.index, target.keys, {**where.rows, **found.rows})
    if shifts:
        shift_notes(service.index, shifts)
    log.info("forgot %s as edit %s (%s)", target.what, edit_ids[-1], where.said())
    message = (
        f"forgot {target.what} as edit {edit_ids[-1]}: its text is gone from {where.said()} "
        f"and the index{where.index_said()}; this cannot be undone. {LOGS_STAY}"
    )
    kept = _backups(home)
    if kept:
        message += (
            f" Older backups still hold it ({counted(kept, 'archive')} in"
            f" {layout.backups(home)}): remove them to be rid of it there too."
        )
    return {"id": target.id, "edits": edit_ids, "places": where.said(), "message": message}


def _backups(home: Home) -> int:
    try:
        return sum(1 for n in os.listdir(layout.backups(home)) if n.endswith(".tar.gz"))
    except OSError:
        return 0


def _without(texts: list[str], file: str, marker: str):
    """The plan removing texts from file; its journal line's before holds the marker in their
    place, so the line never carries the text."""

    def decide(current: list[str]) -> edits.Plan:
        def held(entry: str) -> bool:
            return any(matching.same(entry, text) for text in texts)

        after = tuple(e for e in current if not held(e))
        before = tuple(marker if held(e) else e for e in current)
        return edits.Plan("forget", file, before, after)

    return decide


def _mark_notes(home: Home, numbers: list[int], marker: str) -> list[tuple[int, int]]:
    """notes.md with the text of each numbered note replaced by the marker, headers kept; the
    (old end, change of length) of each note marked."""
    path = home.memory_file("notes.md")
    data = read_file(path)
    wanted = set(numbers)
    out, last, shifts = [], 0, []
    for note in notes.parse(data):
        if note.number not in wanted:
            continue
        header_end = data.index(b"\n", note.start) + 1
        body = marker.encode() + b"\n"
        out += [data[last:header_end], body]
        shifts.append((note.end, len(body) - (note.end - header_end)))
        last = note.end
    out.append(data[last:])
    atomic_write(path, b"".join(out))
    return shifts


def _scrub(service, journal, text: str, marker: str, found: Found) -> None:
    home: Home = service.store.home
    change = _journal_change(text, marker)
    for path in journal.month_files():
        prepared = found.months.pop((str(path), text), None)
        if prepared is not None:
            scrub.finish(prepared, text, change, scrub.journal_dumps)
        else:
            scrub.rewrite(path, text, change, scrub.journal_dumps)
    with recalllog.held(service):
        for path in recall_months(home):
            scrub.rewrite(
                path, text, lambda v: matching.query_change(v, text, marker), scrub.compact_dumps
            )
    pending = home.memory_file("pending.jsonl")
    scrub.rewrite(
        pending, text, lambda v: None if matching.pending_holds(v, text) else v, scrub.journal_dumps
    )
    exchange.scrub_exports(home, text, marker)
