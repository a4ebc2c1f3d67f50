"""notes.md read into the index a part at a time, as session logs are (indexer.py).

notes.md, which the owner may edit anywhere by hand, is read again from its start whenever it
changed other than by an append (see index_notes_part). For a notes.md of years that is
seconds of work (330,000 notes: deleting the rows of the earlier reading about 6 s, reading it
again 10 to 15 s); as one writer job, every memory call and session_updated waited for it, long
enough to pass the write deadline. So it goes in parts of at most PART_SECONDS, PART_RECORDS notes
or PART_BYTES bytes (indexer.one_part), each in the caller's transaction, the writer free between
two parts: a memory call waits for at most one part. Recall answers from what is indexed
meanwhile and says that notes.md is being caught up (Index.meanwhile).

- Reading again from the start first deletes the rows of the earlier reading, a batch at a time
  (notesold.py), a stop in between going on at the next catch-up. Only once none is left is
  notes.md read, from byte 0, so every notes row the index holds then is of the present reading,
  numbered as notes.md numbers it.
- A part reads whole entries: it ends where a header starts (or at the file's end, at its last
  line end, where notes.parse ends a line: memory/notelines.py), so the next part starts at a
  header, as after memoryd's own append; notes.md's stat and the tail hash are checked before
  each part, so a change in between is caught as it is between two appends (noteschanged.py: an
  append, memoryd's own or another's, or a change of its mode or times alone, caught up from
  where the index stopped once the bytes read are shown unchanged; any other change read again
  from the start).
- A part gathers whole entries up to a bound (noteslong.gather_bound): a stretch holding no
  header for longer (one huge paste, a damaged tail of NUL bytes) is searched to its end in
  blocks, a part's bounds at a time, never held whole (notesstretch.py).
- The entries read become rows (notesrows.py); what a reading says of notes.md (damaged headers,
  a line not in UTF-8, text before the first header) names lines as a reading in one piece would
  (notessaid.py: Told).

index_notes reads all of it at once, in the caller's transaction: a build of a new index (a child
process, or the catch-up of a new file before its swap) and a restore, which hold the writer or
no writer at all.
"""

import logging
import os
import sqlite3
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

from memoryd.errors import NotesUnreadable
from memoryd.home import Home, open_read
from memoryd.index import indexer, noteslong, notesold, notesprefix, notesrows, notessaid
from memoryd.index.noteschanged import holds_read
from memoryd.index.notessaid import Told
from memoryd.index.notesstretch import Long, resumed
from memoryd.index.sessionrows import LogState, Part
from memoryd.index.settings import Settings
from memoryd.memory import notelines, notes
from proto.files import NotRegular, TooLarge

# Logged under the indexer's name, as before notes.md's reading had a module of its own.
log = logging.getLogger("memoryd.index.indexer")

NOTES_LOG = indexer.NOTES_LOG
DELETE_BATCH = 2_000  # rows deleted in one statement while reading again from the start
# Bytes read at a time; doubled while no entry is known to be whole, up to a bound past which
# the entry is searched to its end in blocks, not gathered (noteslong.py).
READ_BLOCK = 256 << 10


def index_notes(
    conn: sqlite3.Connection,
    home: Home,
    max_class: str | Settings,
    own_from: str | None = None,
    told: Told | None = None,
) -> int:
    """Index all of notes.md past its progress in the caller's transaction; the rows added."""
    told = Told() if told is None else told
    added, done = 0, False
    while not done:
        more, done = index_notes_part(conn, home, max_class, own_from, Part(), told)
        added += more
    return added


def index_notes_part(
    conn: sqlite3.Connection,
    home: Home,
    max_class: str | Settings,
    own_from: str | None = None,
    part: Part | None = None,
    told: Told | None = None,
) -> tuple[int, bool]:
    """Index at most a part of notes.md past its progress: (rows added, read to its end).

    own_from: notes.md's file_of(whole) just before memoryd's own write that this catch-up
    follows. notes.md whose stat is the one the index read or the one memoryd's write began from
    (it appends, or rewrites with the offset moved to match, data/purge.shift_notes) is read on
    when it still ends the bytes read as the tail hash shows. Any other change of its stat
    (memoryd's own append whose stat died with a killed process, notesafter.py; a chmod, chown
    or touch, which change its times alone; the owner's append; a home copied or moved with cp
    -a, which gives it another inode) is read on only when it still holds every byte read, as
    one read of the file against the digest kept of them (notesprefix.py) and the tail window
    show, so that none costs more than what is new; an edit anywhere before the offset, however
    far back and whatever it kept, and another file under the name with other bytes, have it
    read again from the start. notes.md that cannot be read now (its
    mode, an I/O error) is NotesUnreadable: the transaction is the caller's, so the rows and
    the progress stay as they were, and a later look reads on.
    """
    settings = Settings(max_class=max_class) if isinstance(max_class, str) else max_class
    part = part or indexer.one_part()
    told = Told() if told is None else told
    started = time.monotonic()
    path = home.memory_file("notes.md")
    saved = indexer.load_state(conn, NOTES_LOG)
    state = LogState() if saved is None else replace(saved)
    try:
        return _part(conn, path, state, saved, settings, own_from, part, told, started)
    except (NotRegular, TooLarge):
        raise  # a link or a FIFO there is said as what stands there, as before
    except OSError as error:
        if isinstance(error, NotesUnreadable) or _missing(path):
            raise  # one removed meanwhile is missing at the next look, not unreadable
        raise NotesUnreadable(error, path) from None


def _missing(path: Path) -> bool:
    try:
        os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False  # memory/ that may not be searched: notes.md is there, not readable
    return False


def _part(
    conn: sqlite3.Connection,
    path: Path,
    state: LogState,
    saved: LogState | None,
    settings: Settings,
    own_from: str | None,
    part: Part,
    told: Told,
    started: float,
) -> tuple[int, bool]:
    """index_notes_part's work; an OSError reading notes.md is raised as it comes."""
    exists = os.path.lexists(path)
    file = indexer.file_of(path, whole=True)  # before the read: a change meanwhile is seen next
    if exists:
        open_read(path).close()  # one that cannot be read now is not taken for one changed
    why = None
    if state.bytes and not notesold.deleting(state):
        changed = exists and state.file not in (None, file, own_from)
        if changed and not holds_read(path, state, file):
            why = "changed outside memoryd"
        elif not exists or not indexer._still_valid(path, state, indexer.NOTES_WINDOW):
            why = "changed outside memoryd" if changed else f"changed before byte {state.bytes}"
    if why is not None:
        log.warning("notes %s %s: indexing it again", path, why)
        state = notesold.again()
        told.scan = None
    if notesold.deleting(state):
        over = partial(_deleted_over, part, started)
        if not notesold.delete_old(conn, state, over, DELETE_BATCH):
            indexer.save_state(conn, NOTES_LOG, state)
            part.done = False
            return 0, False
        state = LogState()
    if not exists:
        if state != saved:
            indexer.save_state(conn, NOTES_LOG, state)
        part.done = True
        return 0, True
    first = state.bytes
    added, done = _read(conn, path, file, state, settings, part, told, started)
    if done is None:  # text after the offset continues an entry: read again from the start
        log.warning(
            "notes %s: text after byte %d continues an entry; indexing it again", path, first
        )
        indexer.save_state(conn, NOTES_LOG, notesold.again())
        part.done = False
        return 0, False
    state.file = file
    if state.bytes != first or state != saved:  # nothing new: nothing written (no commit)
        state.tail = indexer._tail_hash(path, state.bytes, indexer.NOTES_WINDOW)
        state.prefix = notesprefix.extend(path, state.prefix, first, state.bytes)
        indexer.save_state(conn, NOTES_LOG, state)
    part.done = done
    return added, done


def _over(part: Part, started: float, records: int, size: int) -> bool:
    """True once a part has done what it may."""
    return (
        (part.seconds is not None and time.monotonic() - started >= part.seconds)
        or (part.records is not None and records >= part.records)
        or (part.bytes is not None and size >= part.bytes)
    )


def _deleted_over(part: Part, started: float, deleted: int) -> bool:
    """True once a part that deleted rows of the earlier reading has done what it may."""
    return _over(part, started, deleted, 0)


def _read(
    conn: sqlite3.Connection,
    path: Path,
    file: str | None,
    state: LogState,
    settings: Settings,
    part: Part,
    told: Told,
    started: float,
) -> tuple[int, bool | None]:
    """Index whole entries of notes.md from state's offset, advancing state, within the part's
    bounds: (rows added, read to its end), None for the second when the text at the offset is no
    header (it continues the entry before it)."""
    added = records = 0
    want = READ_BLOCK
    bound = noteslong.gather_bound(settings.max_record_bytes)
    buf = b""
    with open_read(path) as f:
        _past_owed_lf(f.fileno(), state, told)
        first = state.bytes
        if first == 0:
            told.at, told.lines, told.from_start, told.utf8_said = 0, 0, True, False
        elif told.at != first:
            told.from_start = False  # not the reading this process began (a restart, say)
        f.seek(first)
        while True:
            gathered = resumed(told, state.bytes, file)
            if gathered is None:
                block = f.read(want)
                ended = len(block) < want
                buf += block
                # A last line without its newline is still being written.
                usable = buf[: notelines.last_end(buf)] if ended else buf
                entries = notes.parse(usable, state.bytes, state.records)
                if (
                    state.bytes == first
                    and first
                    and usable
                    and (ended or notelines.last_end(usable))
                ):
                    if not entries or entries[0].start != first:
                        return 0, None
                if ended:
                    used = len(usable)
                elif len(entries) >= 2:  # the last one may go on past what was read
                    used = entries[-1].start - state.bytes
                    entries = entries[:-1]
                elif len(buf) < bound:  # no entry known to be whole yet: read more at once
                    want = min(want * 2, bound)
                    continue
                else:
                    entries = noteslong.whole(buf, state.bytes, entries)
                    if entries and entries[0].start > state.bytes:
                        # Text before the first header: the note is gathered from its header on.
                        used, entries = entries[0].start - state.bytes, []
                    else:  # a stretch without a header longer than a part gathers: not held
                        gathered = buf, entries
            if gathered is not None:
                buf, entries = gathered
                long = Long(f.fileno(), path, file, records, partial(_over, part, started))
                got = long.index(conn, state, settings, told, buf, entries, first)
                if got is None:
                    return 0, None
                more, header = got
                if header is None:  # searched as far as a part may: the next part goes on
                    return added, False
                added += more
                records += len(entries)
                if not header:
                    return added, True
                f.seek(state.bytes)
                buf, want = b"", READ_BLOCK
                if _over(part, started, records, state.bytes - first):
                    return added, False
                continue
            chunk = usable[:used]
            notessaid.say(told, path, chunk, state.bytes, entries)
            added += indexer.insert_rows(conn, notesrows.rows(path, entries, settings))
            state.records += len(entries)
            state.bytes += used
            records += len(entries)
            buf, want = buf[used:], READ_BLOCK
            if ended:
                return added, True
            if _over(part, started, records, state.bytes - first):
                return added, False


def _past_owed_lf(fd: int, state: LogState, told: Told) -> None:
    """state's offset moved past an LF there that ends a CR LF whose CR the last catch-up read
    as its line's end (notelines.py): the rest of that line end, not a line of its own."""
    at = state.bytes
    if at and notelines.owed_lf(os.pread(fd, 1, at - 1), os.pread(fd, 1, at)):
        if told.at == at:
            told.at, told.lines = at + 1, told.lines + 1  # lines are counted by their LFs
        state.bytes = at + 1
