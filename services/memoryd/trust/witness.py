"""memoryd's own witness of a session's taint, from the session's log.

brokerd tells memoryd the calling session's taint and untrusted flag with each memory call. If
brokerd's record of the session is lost (its ledger deleted), that word would be "clean". The
session's log, sessions/<id>/0.jsonl, records the class and untrusted label of every tool result
(spec 1), so before a memory call is routed, memoryd reads the log to its end and uses the
stricter of brokerd's state and the log's.

Cost: each session's state is kept in memory with the log's device, inode, the offset read to and
the bytes before it, so a call reads only what the log gained since the last call. A log that was
replaced, shrank or changed before the offset is read whole. That first whole read (about 2 s for
200 MB) is done ahead of the writer thread (read_ahead, from the service on a thread of its own),
so the writer, which every session's writes wait for, reads only the last few lines; each session
has its own lock, so one session's long read holds up no other session. A session's witnessed label
never gets less strict while memoryd runs (taint only grows), so deleting a log after the fact
changes nothing.

Failing closed: a log that is a symlink (or sits in a symlinked folder), that cannot be opened or
read, or that holds a line that could be a tool result but does not parse as one makes the session
untrusted, with a log line naming it. Only the tool results are read (their class and untrusted
flag); other records are not validated here, that is the index's business. A session with no
log at all (memoryd called directly, or a client without loopd) has nothing to witness: brokerd's
state stands.
"""

import errno
import json
import logging
import os
import re
import stat
import threading
from dataclasses import dataclass, field

from memoryd.home import Home
from proto.labels import CLASS_RANK, higher_class

log = logging.getLogger(__name__)

# How many bytes before the offset read so far are kept to recognise the same log next time.
KEPT_TAIL_BYTES = 256
CHUNK = 4 << 20


@dataclass
class Seen:
    """How far one session's log was read and the label in force at that point; lock: held
    while the log is read."""

    device: int = -1
    inode: int = -1
    offset: int = 0
    tail: bytes = b""
    klass: str = "public"
    untrusted: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)


class LogUnusable(Exception):
    """The log cannot be trusted to tell the session's label: the caller fails closed."""

    def __init__(self, reason: str, path: os.PathLike):
        super().__init__(reason)
        self.reason = reason
        self.path = path


class Witness:
    def __init__(self, home: Home):
        self.home = home
        self._seen: dict[str, Seen] = {}
        self._seen_lock = threading.Lock()

    def _seen_of(self, session: str) -> Seen:
        with self._seen_lock:
            return self._seen.setdefault(session, Seen())

    def read_ahead(self, session: str) -> None:
        """Read the session's log up to its end now, so that the next stricter() reads only what
        is added meanwhile. An unusable log is left for stricter() to report."""
        seen = self._seen_of(session)
        with seen.lock:
            try:
                self._read(session, seen)
            except LogUnusable:
                pass

    def stricter(self, session: str, taint: str, untrusted: bool) -> tuple[str, bool]:
        """The stricter of brokerd's state (taint, untrusted) and the session log's."""
        seen = self._seen_of(session)
        with seen.lock:
            try:
                self._read(session, seen)
            except LogUnusable as e:
                log.warning(
                    "session %s: log %s: %s; treated as untrusted", session, e.path, e.reason
                )
                return taint, True
        klass = higher_class(taint, seen.klass)
        if klass != taint or (seen.untrusted and not untrusted):
            log.info(
                "session %s: its log shows %s%s, stricter than brokerd's %s%s",
                session,
                seen.klass,
                " untrusted" if seen.untrusted else "",
                taint,
                " untrusted" if untrusted else "",
            )
        return klass, untrusted or seen.untrusted

    def _read(self, session: str, seen: Seen) -> Seen:
        """Fold what the session's log gained into seen (its lock held by the caller)."""
        folder = self.home.sessions / session
        path = self.home.session_log(session)
        if seen.klass == "secret" and seen.untrusted:
            return seen  # nothing in the log can make it stricter
        try:
            if stat.S_ISLNK(os.lstat(folder).st_mode):
                raise LogUnusable("its folder is a symlink", path)
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return seen
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise LogUnusable("it is a symlink", path) from None
            raise LogUnusable(f"cannot be opened ({e.strerror})", path) from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise LogUnusable("it is not a regular file", path)
            start = seen.offset if self._same_log(fd, info, seen) else 0
            with os.fdopen(fd, "rb", closefd=False) as f:
                self._read_from(f, start, seen, path)
            seen.device, seen.inode = info.st_dev, info.st_ino
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
        return os.pread(fd, seen.offset - start, start) == seen.tail

    @staticmethod
    def _read_from(f, start: int, seen: Seen, path) -> None:
        """Fold the complete records from byte start into seen (labels only get stricter)."""
        f.seek(start)
        position = start
        rest = b""
        while True:
            chunk = f.read(CHUNK)
            if not chunk:
                break
            data = rest + chunk
            end = data.rfind(b"\n") + 1  # a last line without its newline is still being written
            data, rest = data[:end], data[end:]
            for offset, line in _candidate_lines(data):
                label = _tool_result_label(line)
                if label is _DAMAGED:
                    # A damaged line could have been a tool result of any label.
                    seen.untrusted = True
                    raise LogUnusable(f"the record at byte {position + offset} is damaged", path)
                if label is not None:
                    seen.klass = higher_class(seen.klass, label[0])
                    seen.untrusted = seen.untrusted or label[1]
            position += len(data)
        seen.offset = position
        f.seek(max(0, position - KEPT_TAIL_BYTES))
        seen.tail = f.read(position - max(0, position - KEPT_TAIL_BYTES))


_DAMAGED = object()
# "tool_result" can be written in JSON only as these bytes or with \\u escapes: a line holding
# neither cannot decode to a tool result, and is not parsed at all. Most lines (user, assistant)
# are skipped that way, found by a search over the whole chunk, so a long log is read fast.
_MARKERS = (b"tool_result", b"\\u")
# How loopd writes a tool result (record_json): its label is the last two members of the object.
_HEAD = b'{"type":"tool_result",'
_TAIL = re.compile(rb',"class":"(public|private|secret)","untrusted":(true|false)}\n\Z')


def _candidate_lines(data: bytes):
    """(offset, line) of each line of data that holds a marker, in order."""
    starts: set[int] = set()
    for marker in _MARKERS:
        found = data.find(marker)
        while found != -1:
            start = data.rfind(b"\n", 0, found) + 1
            end = data.find(b"\n", found) + 1
            starts.add(start)
            found = data.find(marker, end)
    for start in sorted(starts):
        yield start, data[start : data.find(b"\n", start) + 1]


def _tool_result_label(line: bytes):
    """(class, untrusted) of a tool result line, None for another record, _DAMAGED for a line
    that is not a record at all."""
    if line.startswith(_HEAD):
        m = _TAIL.search(line, max(0, len(line) - 64))
        if m is not None:
            return m.group(1).decode(), m.group(2) == b"true"
    try:
        record = json.loads(line)
    except ValueError:
        return _DAMAGED
    if not isinstance(record, dict):
        return _DAMAGED
    if record.get("type") != "tool_result":
        return None
    klass, untrusted = record.get("class"), record.get("untrusted")
    if klass not in CLASS_RANK or not isinstance(untrusted, bool):
        return _DAMAGED
    return klass, untrusted
