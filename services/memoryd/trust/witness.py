"""memoryd's own witness of a session's taint, from the session's log.

brokerd tells memoryd the calling session's taint and untrusted flag with each memory call. If
brokerd's record of the session is lost (its ledger deleted), that word would be "clean". The
session's log, sessions/<id>/0.jsonl, records the class and untrusted label of every tool result
(spec 1), so before a memory call is routed, memoryd reads the log to its end and uses the
stricter of brokerd's state and the log's.

One session's log never holds up another session's call. Each session with a call waiting has a
reader thread of its own (ask), started for it and ended when no call of it waits: no pool is
shared, so two sessions reading huge logs leave a third's read untouched, and the writer thread
never reads a log (the service hands it a caller already made stricter). A call is answered from
a read that began after the call arrived and went to the log's end; calls that arrive during a
read wait for the next one, which reads only what the log gained.

Cost: each session's state is kept in memory with the log's device, inode, the offset read to and
the digest of the bytes before it, so a read takes only what the log gained since the last; for
the MOST_SEEN sessions called last (seen.py), and as a smaller point for the MOST_POINTS dropped
last, which a clean stop writes to index/witness.json for the next start (seenfile.py): a session
with neither has its log read whole at its next call, starting from the label it left, so
dropping never makes a label less strict. A log that was
replaced, shrank or changed before the offset is read whole. Reading is in bounded pieces
(logscan.py): memory does not grow with a line's length and time grows with it linearly. A
session's witnessed label never gets less strict while memoryd runs (taint only grows), so
deleting a log after the fact changes nothing.

Failing closed: a log that is not a regular file (a symlink, a FIFO, a socket, a device, a
folder), that sits in a symlinked folder, that cannot be opened or read, or that holds a line
that could be a tool result but does not parse as one makes the session untrusted, with a log
line naming it: for good when the log is not a regular file or a line is damaged, for the call
when an open or a read fails (out of descriptors, say), which may pass. What the log is is
checked with lstat before it is opened, and it is opened with O_NOFOLLOW and O_NONBLOCK
(proto.files), so a FIFO is judged at once, never waited on. Only the tool results are read
(their class and untrusted flag); other records are not validated here, that is the index's
business. A session with no log at all (memoryd called directly, or a client without loopd) has
nothing to witness: brokerd's state stands, above what memoryd recorded of the session
(monotone.py: labels.jsonl and the journal, a floor that brokerd's stricter word raises).
"""

import hashlib
import logging
import os
import stat
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field

from memoryd.home import Home
from memoryd.index.journallabels import Label, stricter
from memoryd.trust import logscan, monotone, risen, seenfile
from memoryd.trust.seen import MOST_SEEN, Point, Seen, SeenStore
from memoryd.trust.stoppable import Stoppable
from proto.files import NotRegular, check_entry, open_file
from proto.labels import higher_class

log = logging.getLogger(__name__)

# How many bytes before the offset read so far are kept to recognise the same log next time.
KEPT_TAIL_BYTES = 256
# How long close() waits for the reader threads, each of which stops within one chunk.
STOP_SECONDS = 5.0


@dataclass(frozen=True)
class Verdict:
    """What a session's log shows: its strictest label, and why it could not be used, if so
    (the label is then untrusted)."""

    klass: str
    untrusted: bool
    problem: str | None = None
    recorded: Label | None = None  # what memoryd records of the session after the read (monotone)


class LogUnusable(Exception):
    """The log cannot be trusted to tell the session's label: the caller fails closed."""

    def __init__(self, reason: str, path: os.PathLike):
        super().__init__(reason)
        self.reason = reason
        self.path = path


class NoVerdict(Exception):
    """The log was not read to its end (memoryd is stopping, or no thread could be started for
    the read): the call must not go on as if it had been."""


@dataclass
class _Waiting:
    """The calls of one session waiting for a read, and whether its reader thread runs."""

    calls: list[Future] = field(default_factory=list)
    reported: list[Label] = field(default_factory=list)  # brokerd's word with each call
    running: bool = False


class Witness:
    def __init__(self, home: Home, most_seen: int = MOST_SEEN):
        self.home = home
        self._seen = SeenStore(most_seen)
        self._lock = threading.Lock()
        self._waiting: dict[str, _Waiting] = {}
        self._threads: set[threading.Thread] = set()
        self._stop = threading.Event()
        self._laxer = monotone.Laxer()
        self._seen.take(self._kept_points())

    def _kept_points(self) -> dict[str, Point]:
        """The points an earlier memoryd left, each at least as strict as the label the
        session left in labels.jsonl, so that a damaged or edited file never makes one laxer."""
        points = seenfile.load(self.home)
        for session, point in points.items():
            left = risen.label(self.home, session)
            klass, untrusted = stricter((point.klass, point.untrusted), left)
            if (klass, untrusted) != (point.klass, point.untrusted):
                points[session] = Point(
                    point.device, point.inode, point.offset, point.tail, klass, untrusted
                )
        return points

    # --- for the service: one reader thread per session with a call waiting ----------------------
    def ask(self, session: str, reported: Label | None = None) -> "Future[Verdict]":
        """The verdict of a read of the session's log that begins after now, on that session's
        own reader thread, with what memoryd records of the session once brokerd's word
        (reported) is recorded. Cancelling the future before the read begins drops it."""
        future: Future[Verdict] = Future()
        with self._lock:
            if self._stop.is_set():
                future.set_exception(NoVerdict())
                return future
            waiting = self._waiting.setdefault(session, _Waiting())
            waiting.calls.append(future)
            waiting.reported.append(reported or monotone.CLEAN)
            if not waiting.running:
                thread = threading.Thread(
                    target=self._serve, args=(session, waiting), name="memoryd-witness", daemon=True
                )
                try:
                    thread.start()
                except RuntimeError as e:  # out of threads: this call gets no verdict
                    log.error("session %s: no thread to read its log: %s", session, e)
                    waiting.calls.remove(future)
                    if not waiting.calls:
                        del self._waiting[session]
                    future.set_exception(NoVerdict())
                    return future
                waiting.running = True
                self._threads.add(thread)
        return future

    def _serve(self, session: str, waiting: _Waiting) -> None:
        try:
            while True:
                with self._lock:
                    calls = [f for f in waiting.calls if f.set_running_or_notify_cancel()]
                    reported, waiting.calls, waiting.reported = waiting.reported, [], []
                    if not calls:
                        waiting.running = False
                        del self._waiting[session]
                        return
                try:
                    outcome: Verdict | BaseException = self.judge(session, reported)
                except NoVerdict as e:
                    outcome = e
                for call in calls:
                    if isinstance(outcome, BaseException):
                        call.set_exception(outcome)
                    else:
                        call.set_result(outcome)
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())

    def close(self) -> None:
        """Stop every read within a chunk; the calls still waiting get NoVerdict."""
        with self._lock:
            self._stop.set()
            threads = list(self._threads)
            for waiting in self._waiting.values():
                for call in waiting.calls:
                    if call.set_running_or_notify_cancel():
                        call.set_exception(NoVerdict())
                waiting.calls, waiting.reported = [], []
        for thread in threads:
            thread.join(STOP_SECONDS / max(1, len(threads)))
        # A point of a read still running when the join gave up may be torn: its digest then
        # does not match, and that log is read whole once.
        seenfile.save(self.home, self._seen.points())

    # --- the verdict ------------------------------------------------------------------------------
    def judge(self, session: str, reported: list[Label] | None = None) -> Verdict:
        """Read the session's log to its end now (under the session's lock) and say what it
        shows, and what memoryd records of the session (brokerd's reported word recorded first:
        monotone.py). NoVerdict if memoryd stops meanwhile."""
        verdict = self._judge(session)
        recorded = monotone.recorded(self.home, session, reported or [])
        return Verdict(verdict.klass, verdict.untrusted, verdict.problem, recorded)

    def _judge(self, session: str) -> Verdict:
        with self._seen.held(session) as seen, seen.lock:
            try:
                self._read(session, seen)
            except LogUnusable as e:
                risen.rise(self.home, session, (seen.klass, seen.untrusted))
                log.warning(
                    "session %s: log %s: %s; treated as untrusted", session, e.path, e.reason
                )
                return Verdict(seen.klass, True, e.reason)
            except logscan.Stopped:
                raise NoVerdict() from None
            except Exception as e:  # noqa: BLE001 - whatever went wrong, the log told nothing
                log.error("session %s: log not read: %r; treated as untrusted", session, e)
                return Verdict(seen.klass, True, f"not read ({type(e).__name__})")
            # Kept outside the index, which may be deleted (risen.py).
            risen.rise(self.home, session, (seen.klass, seen.untrusted))
            return Verdict(seen.klass, seen.untrusted)

    def stricter(self, session: str, taint: str, untrusted: bool) -> tuple[str, bool]:
        """The stricter of brokerd's state (taint, untrusted) and the session log's, read now."""
        return self.apply(session, self.judge(session, [(taint, untrusted)]), taint, untrusted)

    def apply(self, session: str, verdict: Verdict, taint: str, untrusted: bool) -> Label:
        """The strictest of brokerd's state (taint, untrusted), the verdict's and what memoryd
        recorded of the session (monotone.py)."""
        klass = higher_class(taint, verdict.klass)
        if verdict.problem is None and (klass != taint or (verdict.untrusted and not untrusted)):
            log.info(
                "session %s: its log shows %s%s, stricter than brokerd's %s%s",
                session,
                verdict.klass,
                " untrusted" if verdict.untrusted else "",
                taint,
                " untrusted" if untrusted else "",
            )
        witnessed = (klass, untrusted or verdict.untrusted)
        if verdict.recorded is None:
            return witnessed
        return self._laxer.floor(session, (taint, untrusted), witnessed, verdict.recorded)

    # --- reading ---------------------------------------------------------------------------------
    def _read(self, session: str, seen: Seen) -> Seen:
        """Fold what the session's log gained into seen (its lock held by the caller)."""
        path = self.home.session_log(session)
        if seen.klass == "secret" and seen.untrusted:
            return seen  # nothing in the log can make it stricter
        try:
            check_entry(path)  # lstat: anything but a regular file is refused before an open
            fd = open_file(path, os.O_RDONLY)
        except NotRegular as e:
            # Not what loopd writes: the session stays untrusted whatever the path holds later.
            seen.untrusted = True
            raise LogUnusable(str(e.strerror), e.filename or path) from None
        except FileNotFoundError:
            return seen
        except OSError as e:
            raise LogUnusable(f"cannot be opened ({e.strerror})", path) from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise LogUnusable("it is not a regular file", path)
            start = seen.offset if self._same_log(fd, info, seen) else 0
            with os.fdopen(fd, "rb", buffering=0, closefd=False) as f:
                damaged_at = self._read_from(Stoppable(f, self._stop), start, seen, path)
            seen.device, seen.inode = info.st_dev, info.st_ino
            if damaged_at is not None:  # read past: seen.untrusted keeps it for the next read
                raise LogUnusable(f"the record at byte {damaged_at} is damaged", path)
        except OSError as e:
            raise LogUnusable(f"cannot be read ({e.strerror})", path) from None
        finally:
            os.close(fd)
        return seen

    @staticmethod
    def _same_log(fd: int, info: os.stat_result, seen: Seen) -> bool:
        if (info.st_dev, info.st_ino) != (seen.device, seen.inode) or info.st_size < seen.offset:
            return False
        start = max(0, seen.offset - KEPT_TAIL_BYTES)
        return _digest(os.pread(fd, seen.offset - start, start)) == seen.tail

    @staticmethod
    def _read_from(f, start: int, seen: Seen, path) -> int | None:
        """Fold the complete records from byte start into seen (labels only get stricter);
        where the first damaged record begins, if one is."""
        found = logscan.scan(f, start, seen.klass, seen.untrusted, f.stopping)
        seen.klass, seen.untrusted = found.klass, found.untrusted
        seen.offset = found.offset
        f.seek(max(0, found.offset - KEPT_TAIL_BYTES))
        seen.tail = _digest(f.read(found.offset - max(0, found.offset - KEPT_TAIL_BYTES)))
        return found.damaged_at


def _digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()
