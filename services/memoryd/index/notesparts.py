"""notes.md read into the index a part at a time, as session logs are (indexer.py).

notes.md, which the owner may edit anywhere by hand, is read again from its start whenever it
changed other than by an append (see index_notes_part). For a notes.md of years that is
seconds of work (330,000 notes: deleting the rows of the earlier reading about 6 s, reading it
again 10 to 15 s); as one writer job, every memory call and session_updated waited for it, long
enough to pass the write deadline. So it goes in parts of at most PART_SECONDS, PART_RECORDS notes
or PART_BYTES bytes (indexer.one_part), each in the caller's transaction, the writer free between
two parts: a memory call waits for at most one part. Recall answers from what is indexed
meanwhile and says that notes.md is being caught up (Index.meanwhile).

- Reading again from the start first deletes the rows of the earlier reading, a batch at a time.
  notes.md's progress row says so meanwhile (its tail is OLD_ROWS and the highest rowid deleted),
  so that a stop in between goes on deleting at the next catch-up: no row of the earlier reading
  is left beside the new ones. Only once none is left is notes.md read, from byte 0, so every
  notes row the index holds then is of the present reading, numbered as notes.md numbers it.
- A part reads whole entries: it ends where a header starts (or at the file's end, at its last
  newline), so the next part starts at a header, as after memoryd's own append; notes.md's stat
  and the tail hash are checked before each part, so a change in between is caught as it is
  between two appends (an append, memoryd's own or another's, or a change of its mode or times
  alone, caught up from where the index stopped once the bytes read are shown unchanged; any
  other change read again from the start).
- A part gathers whole entries up to a bound (noteslong.gather_bound): a stretch holding no
  header for longer (one huge paste, a damaged tail of NUL bytes) is searched to its end in
  blocks, a part's bounds at a time (Told keeps how far), never held whole; its entry is indexed
  from what was gathered (a row holds its first max_record_bytes), and it is said once.
- A damaged header (memory/notes.py) is logged once per reading, naming its line
  (notes.damage_said), and so are the first line that is not UTF-8 of a reading from the start
  (notes.not_utf8) and text before the first header, which no note holds (notes.leading_said).
  Told keeps the count of lines before the offset reached, so that a later part names lines as a
  reading in one piece would.

index_notes reads all of it at once, in the caller's transaction: a build of a new index (a child
process, or the catch-up of a new file before its swap) and a restore, which hold the writer or
no writer at all.
"""

import logging
import os
import sqlite3
import time
from dataclasses import dataclass, replace
from pathlib import Path

from memoryd.errors import NotesUnreadable
from memoryd.home import Home, open_read
from memoryd.index import indexer, noteslong, notesprefix
from memoryd.index.sessionrows import LogState, Part
from memoryd.index.settings import Settings, cap_text
from memoryd.journal import forgottenmarker
from memoryd.memory import notelines, notes
from proto.files import NotRegular, TooLarge
from proto.labels import CLASS_RANK

# Logged under the indexer's name, as before notes.md's reading had a module of its own.
log = logging.getLogger("memoryd.index.indexer")

NOTES_LOG = indexer.NOTES_LOG
NOTE_ROWS = "kind IN ('noted', 'moved', 'dropped')"
# The tail of notes.md's progress while the rows of the earlier reading are deleted, followed by
# the highest rowid deleted so far (no space: indexer.save_state keeps the file read after one).
OLD_ROWS = "old-rows-after:"
DELETE_BATCH = 2_000  # rows deleted in one statement while reading again from the start
# Bytes read at a time; doubled while no entry is known to be whole, up to a bound past which
# the entry is searched to its end in blocks, not gathered (noteslong.py).
READ_BLOCK = 256 << 10


@dataclass
class Told:
    """Where the present reading of notes.md stands in lines, and what was said of it."""

    at: int | None = None  # the byte offset whose count of lines before it is known
    lines: int = 0
    from_start: bool = False  # the present reading began at byte 0 in this process
    utf8_said: bool = False
    scan: noteslong.Scan | None = None  # the search through a long stretch, as far as it went


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


def _appended_to(read: str | None, now: str | None) -> bool:
    """Whether notes.md (file_of whole, now) is the file the index read (read) grown since: the
    same inode, longer. Anything else that changed its stat, an editor writing over it in place
    with as many bytes, say, is not an append, however far back from the window it changed."""
    old, new = str(read).split(":"), str(now).split(":")
    if len(old) < 3 or len(new) < 3 or old[:2] != new[:2]:
        return False
    return int(new[2]) > int(old[2])


def _times_alone(read: str | None, now: str | None) -> bool:
    """Whether notes.md (file_of whole, now) differs from the file the index read (read) in its
    times alone: the same device, inode and size (a chmod, a chown or a touch changed no byte;
    an editor that wrote as many bytes over it is caught by the digest)."""
    old, new = str(read).split(":"), str(now).split(":")
    return len(old) >= 3 and old[:3] == new[:3]


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
    if state.bytes and not _deleting(state):
        changed = exists and state.file not in (None, file, own_from)
        if changed and not _holds_read(path, state, file):
            why = "changed outside memoryd"
        elif not exists or not indexer._still_valid(path, state, indexer.NOTES_WINDOW):
            why = "changed outside memoryd" if changed else f"changed before byte {state.bytes}"
    if why is not None:
        log.warning("notes %s %s: indexing it again", path, why)
        state = again()
        told.scan = None
    if _deleting(state):
        if not _delete_old(conn, state, part, started):
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
        indexer.save_state(conn, NOTES_LOG, again())
        part.done = False
        return 0, False
    state.file = file
    if state.bytes != first or state != saved:  # nothing new: nothing written (no commit)
        state.tail = indexer._tail_hash(path, state.bytes, indexer.NOTES_WINDOW)
        state.prefix = notesprefix.extend(path, state.prefix, first, state.bytes)
        indexer.save_state(conn, NOTES_LOG, state)
    part.done = done
    return added, done


def _holds_read(path: Path, state: LogState, file: str | None) -> bool:
    """Whether notes.md, whose stat changed since the index read it with no write of memoryd's
    to explain it, is still the file read, every byte before the offset the one read: the same
    inode, grown (_appended_to) or its times alone changed (_times_alone), the digest of the
    bytes read the same (one read of them, only here; the tail window is checked by the
    caller); or another inode at least as long (_copied), the digest the same: a home copied or
    moved. An OSError reading it is raised: a file that cannot be read is not a changed one."""
    copied = _copied(state.file, file, state.bytes)
    if not (_appended_to(state.file, file) or _times_alone(state.file, file) or copied):
        return False
    return notesprefix.holds(path, state.prefix, state.bytes, quiet=False)


def _copied(read: str | None, now: str | None, offset: int) -> bool:
    """Whether notes.md (file_of whole, now) is another file than the index read (read), at least
    as long as the offset: a home copied or moved with cp -a, which keeps every byte and gives a
    new inode. Only the digest of the bytes read tells it from an edit."""
    old, new = str(read).split(":"), str(now).split(":")
    return len(old) >= 3 and len(new) >= 3 and old[:2] != new[:2] and int(new[2]) >= offset


def again() -> LogState:
    """notes.md's progress when it is to be read again from its start: the earlier reading's
    rows are deleted first (none yet)."""
    return LogState(tail=f"{OLD_ROWS}0")


def _deleting(state: LogState) -> bool:
    return state.tail.startswith(OLD_ROWS)


def _delete_old(conn: sqlite3.Connection, state: LogState, part: Part, started: float) -> bool:
    """Delete the earlier reading's rows, a batch at a time, within the part's bounds; True when
    none is left (state's tail says how far it got otherwise)."""
    after = int(state.tail.removeprefix(OLD_ROWS) or 0)
    deleted = 0
    while True:
        (last,) = conn.execute(
            f"SELECT max(rowid) FROM (SELECT rowid FROM sources WHERE {NOTE_ROWS}"  # noqa: S608
            " AND rowid > ? ORDER BY rowid LIMIT ?)",
            (after, DELETE_BATCH),
        ).fetchone()
        if last is None:
            return True
        before = conn.total_changes
        indexer._delete_rows(conn, f"{NOTE_ROWS} AND rowid > ? AND rowid <= ?", (after, last))
        deleted += conn.total_changes - before
        after = last
        state.tail = f"{OLD_ROWS}{after}"
        if _over(part, started, deleted, 0):
            return False


def _over(part: Part, started: float, records: int, size: int) -> bool:
    """True once a part has done what it may."""
    return (
        (part.seconds is not None and time.monotonic() - started >= part.seconds)
        or (part.records is not None and records >= part.records)
        or (part.bytes is not None and size >= part.bytes)
    )


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
            resumed = _resumed(told, state.bytes, file)
            if resumed is None:
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
                        resumed = buf, entries
            if resumed is not None:
                buf, entries = resumed
                long = _Long(f.fileno(), path, file, part, started, records)
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
            _say(told, path, chunk, state.bytes, entries)
            added += indexer.insert_rows(conn, _rows(path, entries, settings))
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


def _resumed(told: Told, at: int, file: str | None) -> tuple[bytes, list] | None:
    """What the last part gathered of the stretch at byte at whose search it left part way,
    when notes.md is the file it searched (or that file grown by an append)."""
    scan = told.scan
    if scan is None or not scan.buf or scan.start != at:
        return None
    if not (scan.file == file or _appended_to(scan.file, file)):
        return None
    return scan.buf, scan.entries


@dataclass
class _Long:
    """Where a stretch without a header longer than a part gathers is met: notes.md's open
    descriptor and stat (indexer.file_of whole), and the part's bounds and work so far."""

    fd: int
    path: Path
    file: str | None
    part: Part
    started: float
    records: int

    def index(
        self,
        conn: sqlite3.Connection,
        state: LogState,
        settings: Settings,
        told: Told,
        buf: bytes,
        entries: list[notes.NoteEntry],
        first: int,
    ) -> tuple[int, bool | None] | None:
        """Index the entry buf (gathered from state's offset, holding fewer than two headers)
        begins, or pass over the text before the first header it holds, searching the rest of
        it in blocks (noteslong.py), advancing state past it: (rows added, whether a header
        follows, None when the part ended the search first); None when the text at the offset
        continues an entry."""
        start, path = state.bytes, self.path
        head = buf[: notelines.last_end(buf)]
        scan = told.scan
        if scan is None or (scan.start, scan.after) != (start, start + len(head)):
            scan = noteslong.Scan.begin(self.fd, start, start + len(head), self.file)
        elif not (scan.file == self.file or _appended_to(scan.file, self.file)):
            scan = noteslong.Scan.begin(self.fd, start, start + len(head), self.file)
        told.scan, scan.file = scan, self.file
        scan.buf, scan.entries = buf, entries  # for the next part, not gathered again
        bytes_before = state.bytes - first
        stretch = noteslong.reach(
            self.fd,
            scan,
            lambda searched: _over(self.part, self.started, self.records, bytes_before + searched),
        )
        if stretch is None:
            return 0, None
        if stretch.end == start:  # not one newline: a last line still being written
            noteslong.unended(path, scan)
            return 0, False
        if stretch.end - start < len(buf):  # the stretch ends within what was gathered
            entries = notes.parse(buf[: stretch.end - start], start, state.records)
        after = None
        if not stretch.header and scan.pos > stretch.end:  # an unended run after the last newline
            after = scan.rebased(stretch.end, self.file)
        if first and start == first and (not entries or entries[0].start != first):
            return None
        _say(told, path, head, start, [e for e in entries if e.start < start + len(head)])
        if told.at == start + len(head):
            told.at, told.lines = stretch.end, told.lines + stretch.lines
        if stretch.end - start > len(buf):  # more than the part gathered
            noteslong.say(path, start, stretch, entries)
        added = indexer.insert_rows(conn, _rows(path, entries, settings))
        state.records += len(entries)
        state.bytes = stretch.end
        # Past the last newline, at the file's end: what was searched holds none, nor a header.
        told.scan = None if stretch.header else after or scan.rebased(stretch.end, self.file)
        if after is not None:
            noteslong.unended(path, after)  # said once: the next catch-up goes on with it
        return added, stretch.header


def _rows(path: Path, entries: list[notes.NoteEntry], settings: Settings) -> list[tuple]:
    limit = CLASS_RANK[settings.max_class]
    rows = []
    for e in entries:
        # A forgotten note's text is the marker: nothing to recall. Whether forgotten.jsonl
        # lists its number is not asked: a hand edit of notes.md may have renumbered the notes,
        # and the number listed may now be a live note's, which was never forgotten.
        if not e.text or CLASS_RANK[e.klass] > limit or forgottenmarker.is_marker(e.text):
            continue
        capped = cap_text(e.text, settings.max_record_bytes)
        if capped is not None:
            log.info(
                "notes %s: entry %d: indexed its first %d bytes",
                path,
                e.number,
                settings.max_record_bytes,
            )
        text = e.text if capped is None else capped
        rows.append(
            (e.kind, e.session, 0, e.number, e.time, e.source, e.klass, int(e.untrusted), text)
        )
    return rows


def _say(told: Told, path: Path, chunk: bytes, offset: int, entries: list) -> None:
    """Log the damaged headers among entries and, once a reading from the start, the first line
    not in UTF-8, naming their lines; then count chunk's lines into told."""
    damaged = [e for e in entries if e.damaged]
    check_utf8 = told.from_start and not told.utf8_said
    if offset == 0 and (leading := notes.leading_said(chunk)) is not None:
        log.warning("%s", leading)  # the first part ends at a header: it holds all such text
    if damaged or check_utf8:
        lines = _lines_before(told, path, offset)
        for e in damaged:
            at = e.start - offset
            said = notes.damage_said(replace(e, start=at), chunk, 0)
            log.warning("%s", _moved(said, chunk.count(b"\n", 0, at) + 1, lines))
        if check_utf8 and (encoding := notes.not_utf8(chunk, lines)) is not None:
            log.warning("%s", encoding)
            told.utf8_said = True
    if told.at == offset:
        told.at, told.lines = offset + len(chunk), told.lines + chunk.count(b"\n")


def _moved(said: str, line: int, before: int) -> str:
    """said, whose "line N" counts from the chunk's start, with N counted from the file's."""
    return said.replace(f"notes.md line {line}", f"notes.md line {line + before}", 1)


def _lines_before(told: Told, path: Path, offset: int) -> int:
    """How many lines notes.md holds before offset (counted once, then kept in told)."""
    if told.at != offset:
        lines, left = 0, offset
        with open_read(path) as f:
            while left > 0 and (block := f.read(min(left, 1 << 20))):
                lines += block.count(b"\n")
                left -= len(block)
        told.at, told.lines = offset, lines
    return told.lines
