"""A new index file built from nothing: what a reindex writes before it swaps the file in.

build() reads every indexable session log and notes.md into index/memory.sqlite3.new and touches
nothing else (the index in use is only read, for the sessions' labels), so it can run
anywhere: on a thread (Index.build_new, tests) or in a child process (rebuild.py, memoryd's
reindex). It needs only the home, the settings and the recall mode; the index in use (index.py)
then catches the new file up with what was written meanwhile and swaps it in on its writer
(Index.finish_new).
"""

import logging
import os
import sqlite3
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from memoryd import modes
from memoryd.home import Home, ensure_dir
from memoryd.index import indexer, labelkept
from memoryd.index.dbfile import create_file, remove_database
from memoryd.index.indexer import Part, Settings
from memoryd.journal import keptout
from memoryd.search import generation
from proto.files import NotRegular
from proto.messages import is_session_id
from proto.plural import counted

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rebuilt:
    """A new index file built by build(), waiting for Index.finish_new."""

    path: Path
    logs: int
    records: int
    notes: int


def new_path(path: Path) -> Path:
    """Where the new file of the index at path is built."""
    return path.with_name(path.name + ".new")


# The skipped logs a listing names one by one; the rest in one line.
SKIPPED_SAID = 5


def indexable_sessions(home: Home, skipped: dict[str, str] | None = None) -> list[str]:
    """The sessions whose log can be indexed, by name; a symbolic link (at sessions/<id> or at
    its 0.jsonl) or a log that is not a regular file is skipped with a log line (and in skipped,
    with why, when given). So is a log in a folder whose name is not a session id (misnamed),
    said once. A log memoryd may not reach now (a folder it may not search) is listed: reading
    it fails, and the reader says so. sessions/ that is there and is not a folder (a file, a
    FIFO, a link to nothing) lists no session, said once in a WARNING (folder_problem). A folder
    memoryd may not list raises the OSError: a reindex or a backup is refused rather than made
    without its logs (memoryd's own listing takes it as listed_sessions does)."""
    listing = _listing(home)
    return [] if listing is None else _indexable(home, listing, skipped)


def listed_sessions(home: Home, skipped: dict[str, str] | None = None) -> list[str] | None:
    """indexable_sessions, or None when sessions/ is there but is not a folder memoryd can list
    now: a file, a FIFO, a link to nothing, or a folder its mode or owner keeps memoryd out of
    (a chmod, a copy or a chown made as another user). Said once in a WARNING naming sessions/
    and why; the index keeps what it holds of those logs, and memoryd lists sessions/ again
    later (listagain.py): the index is not at fault, and memoryd serves meanwhile."""
    try:
        listing = _listing(home)
    except FileNotFoundError:
        listing = _listing(home)  # removed between its look and its listing: looked at again
    except OSError as error:
        _say_folder(home, folder_problem(home) or f"cannot be listed ({error.strerror or error})")
        return None
    return None if listing is None else _indexable(home, listing, skipped)


def _listing(home: Home) -> list[str] | None:
    """The names under sessions/ ([] when it is not there: no session has run yet), or None when
    it is there and is not a folder (said once); a folder that cannot be listed raises."""
    base = os.fspath(home.sessions)
    if not os.path.isdir(base):
        problem = folder_problem(home)
        _say_folder(home, problem)
        return None if problem is not None else []
    listing = os.listdir(base)
    _say_folder(home, None)
    return listing


def _indexable(home: Home, listing: list[str], skipped: dict[str, str] | None) -> list[str]:
    base = os.fspath(home.sessions)
    names: list[str] = []
    odd: list[str] = []
    for name in listing:
        (names if is_session_id(name) else odd).append(name)
    names.sort()
    odd_logs = misnamed(home, odd)
    if skipped is not None:
        skipped.update(odd_logs)
    found, said = [], 0
    for name in names:
        problem = indexer.log_problem(home, name, base)
        if problem is None or not isinstance(problem, (FileNotFoundError, NotRegular)):
            found.append(name)  # one memoryd may not read yet is tried, and left out in a line
        elif isinstance(problem, NotRegular):
            said += 1
            if said <= SKIPPED_SAID:
                log.warning("session log %s: skipped: %s", home.session_log(name), problem)
            if skipped is not None:
                skipped[name] = problem.strerror or str(problem)
    if said > SKIPPED_SAID:
        log.warning(
            "%s: %s skipped as well (bxctl memory stats names them)",
            home.sessions,
            counted(said - SKIPPED_SAID, "more session log"),
        )
    return found


def folder_problem(home: Home) -> str | None:
    """What is wrong with sessions/ itself, in a few words, or None: a folder (or a link to one,
    read through), or not there at all (a home no session has run in yet: nothing to say). A
    folder memoryd may not open is said too: no log under it can be listed."""
    base = os.fspath(home.sessions)
    try:
        st = os.lstat(base)
        if stat.S_ISLNK(st.st_mode):
            try:
                st = os.stat(base)
            except FileNotFoundError:
                return "a symbolic link to nothing"
        if stat.S_ISREG(st.st_mode):
            return "a file, not a folder"
        if stat.S_ISFIFO(st.st_mode):
            return "a FIFO, not a folder"
        if not stat.S_ISDIR(st.st_mode):
            return "not a folder"
        os.close(os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"cannot be listed ({e.strerror or e})"
    return None


# What memoryd's log said last of each sessions/ folder that is not one: said once while it
# stays so, not at every listing (every stats lists the sessions), and again after it was mended.
_folder_said: dict[Path, str] = {}


def _say_folder(home: Home, problem: str | None) -> None:
    with _misnamed_lock:
        before = _folder_said.pop(home.sessions, None)
        if problem is not None:
            _folder_said[home.sessions] = problem
    if problem is not None and problem != before:
        log.warning(
            "%s %s, so no session log under it is indexed now; the sessions the index holds stay"
            " in it as they were (bxctl memory stats counts them), and memoryd catches its logs"
            " up once it can list it",
            home.sessions,
            problem if problem.startswith("cannot") else f"is {problem}",
        )


# What stats says of a session folder whose name no session has (a copy a file manager made, "mm-x
# (copy)"): a session id is all a log is known by on the wire, so it is never indexed as it is.
MISNAMED = (
    "its folder's name is not a session id (a copy made by hand?), so it is not indexed: give the"
    " folder its session's id, or remove it"
)

# The misnamed folders memoryd's log has named, per sessions/ folder: each is said once, not at
# every listing (every stats lists the sessions, on threads of its own beside the writer's); one
# gone and put back is said again.
_misnamed_said: dict[Path, set[str]] = {}
_misnamed_lock = threading.Lock()


def misnamed(home: Home, names: list[str]) -> dict[str, str]:
    """Of the entries of sessions/ named outside the session id pattern, those holding a log (a
    folder copied by hand), each with why it is not indexed; logged once each (SKIPPED_SAID by
    name, the rest in one line). Anything else there (a stray file) is not memoryd's to name."""
    held = sorted(n for n in names if os.path.lexists(home.sessions / n / "0.jsonl"))
    with _misnamed_lock:
        before = _misnamed_said.get(home.sessions, set())
        _misnamed_said[home.sessions] = set(held)
    new = [n for n in held if n not in before]
    for name in new[:SKIPPED_SAID]:
        log.warning("session log %s: skipped: %s", home.sessions / name / "0.jsonl", MISNAMED)
    if len(new) > SKIPPED_SAID:
        log.warning(
            "%s: %s in folders not named by a session id skipped as well (bxctl memory stats"
            " names them)",
            home.sessions,
            counted(len(new) - SKIPPED_SAID, "more session log"),
        )
    return dict.fromkeys(held, MISNAMED)


def left_out(home: Home, session: str, error: OSError) -> None:
    """Say in one line that a log was left out of a new index (the catch-up tries it again)."""
    why = error.strerror or str(error)
    log.warning("session log %s: left out of the new index: %s", home.session_log(session), why)


def build(
    home: Home,
    settings: Settings,
    mode: str,
    path: Path,
    progress: Callable[[int], None] | None = None,
) -> Rebuilt:
    """Build new_path(path) from sessions/ and notes.md, in recall mode mode, carrying over the
    vectors of unchanged rows from the index at path (hybrid). One build at a time (the caller
    sees to it)."""
    ensure_dir(home.index_dir)
    new = new_path(path)
    remove_database(new)
    create_file(new)
    read = 0

    def counted(n: int) -> None:
        nonlocal read
        read += n
        if progress is not None and read % 10_000 == 0:
            progress(read)

    conn = sqlite3.connect(new, isolation_level=None)
    try:
        # Nothing reads this file before it is whole: no journal, no fsync until the end.
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("BEGIN")
        indexer.create_schema(conn)
        indexer.write_stamp(conn, settings)
        modes.prepare(conn, mode, new, fresh=True)  # recall modes
        logs = records = 0
        whole = Part()
        # The labels the index in use holds: no log is indexed laxer than it was (labelkept.py).
        old = labelkept.old_labels(path)
        for session in indexable_sessions(home):
            kept = old.pop(indexer.log_name(session), None)
            try:
                records += indexer.index_session_part(
                    conn, home, session, settings, counted, replace(whole), kept
                )[0]
            except OSError as error:  # one log memoryd may not read never fails the reindex
                indexer.drop_log(conn, session)
                if kept is not None:  # the catch-up that reads it later starts from it
                    labelkept.keep_left(conn, indexer.log_name(session), kept)
                left_out(home, session, error)
                continue
            logs += 1
        for name, label in old.items():  # removed sessions' labels stay in the new index
            labelkept.keep_left(conn, name, label)
        notes = indexer.index_notes(conn, home, settings)
        generation.seal(conn)  # a new file: a lineage of its own (recall's term counts)
        generation.store_counts(conn)
        conn.execute("COMMIT")
        modes.carry_over(conn, path)  # recall mode hybrid: vectors kept
        conn.execute("PRAGMA journal_mode = WAL")
    finally:
        conn.close()
    # Written without fsync: flush it all now, off the writer, so that the swap's fsync only has
    # the tail to write.
    with open(new, "rb") as f:
        os.fsync(f.fileno())
    return Rebuilt(new, logs, records, notes)


def catch_up(
    conn: sqlite3.Connection,
    home: Home,
    settings: Settings,
    sessions: list[str],
    damaged: dict[str, str],
) -> list[str]:
    """What was written during a build, onto the new file (in the caller's transaction): each
    log's new records, notes.md, and the rows of the keys a forget listed meanwhile (it may have
    come after the build read them). A log that cannot be read is left out, its rows dropped, in
    one log line; returns those logs, for the catch-up to take later. A log whose reading stops
    at a damaged record goes into damaged, with where and why."""
    left: list[str] = []
    for session in sessions:
        conn.execute("SAVEPOINT one_log")
        try:
            part = Part()
            indexer.index_session_part(conn, home, session, settings, part=part)
            if part.damaged is not None:
                damaged[session] = part.damaged
        except OSError as error:
            conn.execute("ROLLBACK TO one_log")
            indexer.drop_log(conn, session)
            left_out(home, session, error)
            left.append(session)
        conn.execute("RELEASE one_log")
    indexer.index_notes(conn, home, settings)
    gone = keptout.rows_condition(conn, home)
    sql = "SELECT EXISTS (SELECT 1 FROM sources WHERE {})"
    if gone is not None and conn.execute(sql.format(gone[0]), gone[1]).fetchone()[0]:
        conn.execute("PRAGMA secure_delete = ON")
        indexer._delete_rows(conn, *gone)
    return left
