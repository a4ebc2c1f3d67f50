"""bxctl memory forget ID: the owner makes memoryd forget a note, an entry or a session record.

ID is note:N (as search prints it), memory.md:N or user.md:N (the Nth entry of the file now, from
1), session:ID:N (record N of a session's log, as search prints it), or exact text: an entry's, a
note's, a recall query's or a pending write's, or the text of a record the index holds (targets.py).
What is forgotten is that text exactly (surrounding whitespace aside), wherever a value that carries
what was written holds it (matching.py); a session record's texts are its rows and what each of its
tool calls wrote (a recall's query, a memory call's text: taken.py), so none stays where memoryd
wrote it alone, nor comes back from a later log. Never a longer text that merely contains it, never
a field that says how something was written. It is removed from every place memoryd holds it
(places.py), on the writer thread (erasing.py): first the files (an entry of memory.md or user.md
equal to it is removed by an owner's edit, action "forget", whose journal line holds the marker
where the text was; a note equal to it keeps its header and gets the marker, notes.md rewritten
atomically), then the journal's older copies, the recall log's queries, pending writes and the
exports left in backups/ (scrub.py), then the keys of every record that held it (the one named, and
any other record the index holds it in, such as the session record of the memory call that wrote it:
carriers.py) go to forgotten.jsonl, so that no catch-up, reindex or swap of a rebuilt index puts it
back, and their rows leave the index (purge.py). The files come first so that the journal never says
less than the files hold (the hand-edit check compares them). A forget stopped part way (a crash, a
full disk) is finished by running it again, by the same id or by the text's exact words: before its
first write it records what it takes (unfinished.py), and until it has finished forget takes nothing
else, so a number given again never names another entry or note than the first run did. The journal
says what was forgotten by id, the keys it listed and when, and the ids of the staged writes it
dropped (resolved by it: journal/forgotpending.py; an empty list when none), never the text. It
cannot be undone (undo says why), and session logs, which are loopd's, keep their text: the answer
says so. Archives in backups/ are left as they are: the answer names those that may still hold it
(archiveheld.py).
"""

import datetime as dt
import hashlib
import logging
import time
from dataclasses import dataclass
from typing import Any

from memoryd.data import (
    archiveheld,
    carriers,
    erasing,
    ftsmerge,
    layout,
    scrub,
    taken,
    targets,
    unfinished,
)
from memoryd.data.carrierseen import Prepared
from memoryd.data.erasing import Found, NotesMoved
from memoryd.data.purge import purge, reset_tail, rows_of_keys, shift_notes
from memoryd.data.targets import (  # noqa: F401  (forget.NOTE, ENTRY, SESSION: the ids it takes)
    ENTRY,
    NOTE,
    SESSION,
)
from memoryd.errors import AdminRefused, EditRefused
from memoryd.home import Home
from memoryd.index import indexer
from memoryd.journal import forgetcuts, forgotten, forgottenmarker, forgottenwrite
from memoryd.journal.journal import Edit
from memoryd.memory.handedit import ChangedByHand
from memoryd.trust.caller import OWNER
from memoryd.writer import WRITE
from proto.plural import counted
from proto.trim import trim

log = logging.getLogger(__name__)

ARCHIVES_NAMED = 5  # archives an answer names (then how many more)
LOGS_STAY = (
    "Session logs are loopd's and stay as they are: what was said in a session stays in its log "
    "under sessions/, and memoryd will not index it again."
)


def check_of(texts: list[str]) -> str:
    """What the owner was shown, so that the forget acts on that and nothing else. It travels to
    bxctl and back within one command and is never stored."""
    return hashlib.sha256("\0".join(texts).encode()).hexdigest()


def preview(service, ref: str, stopped: targets.Stopped = unfinished.read) -> dict:
    """What forget would do (a read): where the text is, and the text itself for the owner to
    see before saying yes (bxctl prints it escaped); the message holds no text. stopped: the
    forget that stopped part way, as the caller can tell it from one running beside the preview
    (owner/datalock.stopped_forget), whose record is no stop."""
    _caught_up(service)
    target = taken.target(service, ref, stopped=stopped)
    where = taken.where(service, target)
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


def prepare(service, ref: str) -> Found:
    """Found for ref; the caller drops it once the forget ran (or failed)."""
    store = service.store
    _caught_up(service)
    target = taken.target(service, ref)
    found = Prepared(stamp_of(store.now()))
    where = taken.where(service, target, found.seen.find)  # taken again by run()'s writer job
    keys = target.keys + [forgotten.note_key(n) for n in where.notes]
    marker = forgottenmarker.marker(found.stamp)
    found.rows = dict(where.rows)
    unfound = [key for key in keys if key not in where.rows]
    with service.index.reader() as conn:  # one pass for them all, not a scan a key
        held = rows_of_keys(conn, unfound) if unfound else {}
    found.rows.update({key: held.get(key, []) for key in unfound})
    try:
        for text in target.texts:
            change = erasing.journal_change(text, marker)
            for path in store.journal.month_files():
                prepared = scrub.prepare(path, text, change, scrub.journal_dumps)
                if prepared is not None:
                    found.months[(str(path), text)] = prepared
    except BaseException:
        found.drop()
        raise
    return found


def _caught_up(service) -> None:
    """On a reader: the index caught up with the session logs first, so that a record already
    written but not yet indexed is found and forgotten too. Each part is a writer job of its own
    (as the background catch-up goes), submitted once the one before is done: a memory call, a
    session_updated or an owner's write that comes meanwhile runs between two parts, never
    behind the whole backlog a start may leave. A stop ends it between two parts, refused."""
    for session in carriers.behind(service.index):
        done = False
        while not done:
            if service.stopping.is_set():  # nothing is written before the forget itself
                raise AdminRefused(
                    "refused: memoryd is stopping; nothing was forgotten: run forget again once"
                    " it is back"
                )
            job = service._writer.submit(WRITE, carriers.catch_up_part, service.index, session)
            done = job.result()


def _caught_up_here(index) -> None:
    """On the writer, inside the forget: what reached the logs since prepare() caught up, so the
    forget is exact. That is normally a turn or two, well within one part per session. The writer
    is never held for more: a session with more than a part left (a log rewritten meanwhile, or a
    forget run without prepare() while a start's backlog is left) stops the catch-up after that
    part, and so does a part's worth of time spent on many small logs; the forget is then refused
    before anything changed, and run again, its prepare() catches the rest up a part per writer
    job."""
    late = carriers.behind(index)
    started = time.monotonic()
    for n, session in enumerate(late):
        if not carriers.catch_up_part(index, session):
            left = len(late) - n
        elif n + 1 < len(late) and time.monotonic() - started > indexer.PART_SECONDS:
            left = len(late) - n - 1
        else:
            continue
        raise AdminRefused(
            f"refused: the index is still catching up with {counted(left, 'session')}; nothing "
            "was forgotten: try again in a moment"
        )


def stamp_of(when: dt.datetime) -> str:
    return f"{when.astimezone(dt.UTC):%Y-%m-%dT%H:%MZ}"


def run(
    service,
    ref: str,
    found: Found | None = None,
    check: str | None = None,
    merge_later: bool = False,
) -> dict:
    """Forget ref (on the writer thread); found: prepare()'s, just before; check: the
    preview's, when the owner was shown what ref named. merge_later: the caller, off the writer
    thread, makes the index's merge in steps with settle() (writes run between them); else it is
    made here, at once."""
    store = service.store
    home: Home = store.home
    with store.lock:
        store.detect_hand_edits()
    _caught_up_here(service.index)
    found = found or Found(stamp_of(store.now()))
    target = taken.target(service, ref, found.rows)
    if check is not None and check != check_of(target.texts):
        raise AdminRefused(
            f"refused: {ref[:64]} no longer names what you were shown (memory changed meanwhile); "
            "nothing was forgotten: run forget again"
        )
    # the index rows prepare() found, only what changed since looked for again (carrierseen.py)
    again = found.seen.again if isinstance(found, Prepared) else None
    where = taken.where(service, target, again)
    when = store.now().astimezone(dt.UTC)
    stamp = found.stamp
    marker = forgottenmarker.marker(stamp)
    # The journal line names every key the forget lists, so that a damaged line of
    # forgotten.jsonl loses none of them (forgotten.journal_keys).
    listing = [*target.keys, *(forgotten.note_key(n) for n in where.notes), *where.records]
    keys = list(dict.fromkeys(listing))
    # The digest of each text too: what a restore of an older archive or an import of an older
    # export recognises it by, memoryd keeping no copy of the text (forgetlines.Forgot).
    # With each, the digests of its first bytes as another max_record_bytes would cut it, so
    # that the text said again after the owner changed the cap stays out (forgetcuts.py).
    listed = [forgotten.digest(t) for t in target.texts if trim(t)]
    listed += [cut for t in target.texts for cut in forgetcuts.cuts(t)]
    digests = list(dict.fromkeys(listed))
    forgot = {"id": target.id, "at": stamp, "keys": keys, "digests": digests}
    # The staged writes it takes away, resolved by this forget, not lost; an empty list when it
    # takes none, so that only an older memoryd's line, without the list, can be said to have
    # taken a write later missing (forgotpending.unnamed).
    forgot["pending"] = erasing.pending_taken(store.review, target.texts)
    _record(home, ref, target, keys)
    try:
        edit_ids, shifts = _first_changes(store, where, target, marker, forgot, when)
    except AdminRefused as e:  # refused before any write (NotesMoved too), or part way
        if not target.resumed and not isinstance(e, PartWay):
            unfinished.drop(home)
        raise
    for text in target.texts:
        erasing.scrub_everywhere(service, store.journal, text, marker, found)
    # Every other record that held it (the memory call that wrote it) is forgotten too.
    own = set(target.keys)
    target.keys += [key for key in where.records if key not in own]
    reset_tail(store)
    if shifts:  # before the job's end: the notes.md catch-up after it reads on from there
        shift_notes(service.index, shifts)
    # The keys' lines in forgotten.jsonl, then the delete of their rows: writer jobs of their own
    # (settle), other writes running between. Meanwhile the journal's line lists the keys, so
    # nothing listed is recalled or indexed again, and a kill leaves the forget's record.
    rest = Rest(list(target.keys), digests, stamp, edit_ids[-1], {**where.rows, **found.rows})
    log.info("forgot %s as edit %s (%s)", target.what, edit_ids[-1], where.said())
    message = (
        f"forgot {target.what} as edit {edit_ids[-1]}: its text is gone from {where.said()} "
        f"and the index{where.index_said()}; this cannot be undone. {LOGS_STAY}"
    )
    done: dict[str, Any] = {"id": target.id, "edits": edit_ids, "places": where.said()}
    done.update(message=message, **{REST: rest})
    if merge_later:  # the texts for the caller's settle(), which takes them out of done
        return {**done, "texts": list(target.texts)}
    return settle(service, done, ftsmerge.inline, list(target.texts))


def settle(service, done: dict, on_writer, texts: list[str]) -> dict:
    """The last steps of a forget run() made, each run by on_writer: its keys listed in
    forgotten.jsonl, their rows deleted from the index (a slice a step), the merge of the words of
    those rows out of the index's term lists (in steps), then the end of what a re-run must take
    again; done's message says what is left, and names the archives in backups/ that may still
    hold texts (read off the writer: archiveheld.py)."""
    home: Home = service.store.home
    rest = done.get(REST)
    if rest is not None:
        on_writer(_list, home, rest.keys, rest.digests, rest.stamp, rest.edit)
        on_writer(purge, service.index, rest.keys, rest.rows)
    words_left = ftsmerge.merge_owed(service.index, on_writer)  # the rewrite may take the room left
    on_writer(unfinished.drop, home)  # last: until here a re-run must take what this run took
    message = done["message"]
    if words_left is not None:
        message += (
            f" Its words stay in the index's search lists ({words_left}) until a later forget"
            " or `bxctl reindex` has room to rewrite them; no recall finds them."
        )
    wal = service.index.wal_owed.said()  # a read kept the WAL full (index/walowed.py)
    if wal is not None:
        message += f" {wal}"
    kept = archiveheld.holding(home, texts)
    if kept:
        names = ", ".join(kept[:ARCHIVES_NAMED])
        if len(kept) > ARCHIVES_NAMED:
            names += f" and {len(kept) - ARCHIVES_NAMED:,} more"
        message += (
            f" {counted(len(kept), 'backup')} in {layout.backups(home)} may still hold it"
            f" ({names}): remove {'it' if len(kept) == 1 else 'them'} to be rid of it there too."
        )
    return {**{k: v for k, v in done.items() if k not in ("texts", REST)}, "message": message}


REST = "rest"  # what run() leaves to settle() in its answer, never sent


@dataclass(frozen=True)
class Rest:
    """The forget's steps after its run() job: its keys listed, then their index rows deleted."""

    keys: list[str]
    digests: list[str]
    stamp: str
    edit: str
    rows: dict[str, list[int]]  # the rowids found of each key (purge's hints)


def _list(home: Home, keys: list[str], digests: list[str], stamp: str, edit: str) -> None:
    """The keys and digests forgotten.jsonl does not hold yet on whole lines (not the journal's:
    each must be on a line of the file), appended in one write: a text 40,000 records hold took
    an hour when each key was a read of the file and an fsync of its own."""
    listed, held = forgottenwrite.own(home)
    keys = [key for key in dict.fromkeys(keys) if key not in listed]
    # a forget by its edit: one made in the same minute is another
    forgot = [forgotten.Forgot(d, stamp, edit) for d in digests]
    texts = [f for f in forgot if f not in held]
    if keys or texts:
        forgottenwrite.add(home, keys, stamp, edit, texts)


def _record(home: Home, ref: str, target, keys: list[str]) -> None:
    """What this forget takes, recorded before its first write (unfinished.py)."""
    entry = unfinished.Unfinished(ref, target.id, target.what, list(target.texts), keys)
    try:
        unfinished.record(home, entry)
    except OSError as e:
        if target.resumed:
            raise stopped_part_way(error_text(e)) from None
        cause = error_text(e)
        raise AdminRefused(f"refused: forget failed ({cause}); nothing was forgotten") from None


def _first_changes(store, where, target, marker: str, forgot: dict, when) -> tuple[list, list]:
    """The forget's first writes: each file's entries edited, notes.md's notes marked, or else a
    journal line of its own. Until one of them is made nothing is forgotten, and a failure says
    so; after one, the forget has begun, and a failure is the caller's "stopped part way" (run
    again, it finishes). Returns the edits' ids and notes.md's shifts."""
    home: Home = store.home
    edit_ids: list[str] = []
    shifts: list[tuple[int, int]] = []
    marked = False
    try:
        # Every check that can refuse comes before the first write. notes.md's (the owner may
        # have saved it meanwhile) is made first, then the edits of memory.md and user.md, which
        # may give up with nothing written (a file saved by hand again and again while it is
        # planned, or one that cannot be edited): notes.md is marked only once they are in, so
        # a forget that gives up has changed no file.
        if where.notes:
            erasing.check_notes(home, where.notes, target.texts)
        for file in where.entries:
            record = store.owner_edit(
                file,
                erasing.without(target.texts, file, marker),
                OWNER,
                "forget",
                {"forgot": forgot},
            )
            if record is not None:
                edit_ids.append(record.id)
        if where.notes:
            shifts = erasing.mark_notes(home, where.notes, target.texts, marker)
            marked = True
            target.keys += [forgotten.note_key(n) for n in where.notes]
        if not edit_ids:
            line = store.journal.append(when, _own_line(forgot, bool(where.notes)))
            edit_ids.append(line.id)
    except (OSError, EditRefused, NotesMoved) as e:
        if edit_ids or marked or target.resumed:
            # not NotesMoved's own words: something was forgotten, or is to be finished
            cause = erasing.NOTES_CHANGED if isinstance(e, NotesMoved) else error_text(e)
            raise stopped_part_way(cause) from None
        if isinstance(e, NotesMoved):
            raise
        cause = error_text(e)
        raise AdminRefused(f"refused: forget failed ({cause}); nothing was forgotten") from None
    return edit_ids, shifts


def _own_line(forgot: dict, notes: bool) -> Edit:
    return Edit.model_validate(
        {
            "session": "owner",
            "call": None,
            "taint": None,
            "untrusted": False,
            "action": "forget",
            "file": None,
            "to": "notes.md" if notes else None,
            "before": [],
            "after": [],
            "notes": [],
            "forgot": forgot,
        }
    )


class PartWay(AdminRefused):
    """A forget that had begun to write stopped: its record stands (unfinished.py)."""


def stopped_part_way(cause: str) -> AdminRefused:
    """The refusal of a forget that had begun to write: run again, it finishes."""
    return PartWay(
        f"refused: forget stopped part way ({cause}); run it again with the same id, or with the "
        "text's exact words, to finish it"
    )


def error_text(e: Exception) -> str:
    """An error in a few words: an OSError's reason, and its file when it names one; a
    refusal's reason without its "refused: "."""
    if isinstance(e, ChangedByHand):
        return (
            f"{e.file} was saved by hand again and again while forget edited it; the hand "
            "edits are kept and journalled"
        )
    if isinstance(e, OSError):
        what = e.strerror or str(e)
        return f"{what}: {e.filename}" if e.filename else what
    return str(e).removeprefix("refused: ")
