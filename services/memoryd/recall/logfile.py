"""recalls/YYYY-MM.jsonl: one line per recall, written before the recall answers (spec 3, 5).

Each line is one write to a file opened for appending, so a crash of memoryd loses none; the
fsync runs on a background thread, so no recall waits for the disk: at most the lines of the
last SYNC_INTERVAL before a power cut can be lost, and the log only feeds hit counts.

A full (or failing) disk does not stop recall. Recall is read-only work and its line is best
effort: when the line cannot be written (DISK_ERRORS), the append is cut back to the size the
file had before it, so the log keeps whole lines and the next line is not glued onto a torn one,
and the recall answers without its line. memoryd's log says once that lines are being skipped and
once when they are written again (with how many were skipped), not once a recall: a disk that
stays full would otherwise fill the log with a line per recall. So is a line that cannot be written
because the month file's path leads to no file (a folder put there, recalls/ replaced by a
file): said once, skipped until it is mended. Any other error is raised (a link swapped in is
refused in its own words, NotRegular).

A month file whose last line a power cut tore (no newline at its end) gets a newline when it is
opened, before the first line appended to it, as the journal's append does.

The month file is kept open, so each append first checks that the path still names the file the
descriptor is to (a stat of the path against the descriptor's device and inode): a month file
removed or replaced while memoryd runs (the owner freeing space, a restore) is opened anew at the
path, said in one line, so no line goes on into a file no reader can find. That look, and the
open, follow no link in memory/ or recalls/ either (belowhome.py): a folder moved to another disk
and linked back keeps the month file's inode, and lines would go on outside {home} through it.
A month file given a second hard link while memoryd holds it (the start gives one linked before a
copy of its own, owncopy.py) would take each line at that name too: its lines are skipped, said
once, until the link is gone.
"""

import datetime as dt
import errno
import logging
import os
import threading
from pathlib import Path

from memoryd.belowhome import open_below, stat_below
from memoryd.home import FILE_MODE, Home, NotRegular
from proto.files import hard_links, refuse

log = logging.getLogger(__name__)

# At most how long a recall log line waits for its fsync, in seconds.
SYNC_INTERVAL = 0.2
# A disk with no room, over quota, or failing: the line is skipped, the recall answers.
DISK_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS})


class RecallLog:
    """The recall log's month file, kept open and appended to under a lock; data/recalllog.py
    holds the lock (and closes the descriptor) while it replaces a month."""

    def __init__(self, home: Home):
        self.home = home
        self._lock = threading.Lock()
        self._month: str | None = None
        self._fd: int | None = None
        # The size a torn append could not be cut back to yet: cut before the next line.
        self._cut: int | None = None
        self._skipped = 0
        self._unsynced: str | None = None
        self._dirty = threading.Event()
        self._stopping = threading.Event()
        self._flusher = threading.Thread(target=self._flush_loop, name="recall-log", daemon=True)
        self._flusher.start()

    def append(self, line: str) -> None:
        """Append line, or skip it (said once in memoryd's log) when the disk has no room."""
        data = (line + "\n").encode("utf-8")
        when = dt.datetime.now(dt.UTC)
        path = self.home.recalls_month(when)
        with self._lock:
            try:
                self._write(when, data)
            except OSError as e:
                disk = e.errno in DISK_ERRORS
                if not disk and not _not_a_file(e):
                    raise
                if self._skipped == 0:
                    log.warning(
                        "%s: cannot write recall lines (%s); recalls answer without them until %s",
                        path,
                        e.strerror or str(e),
                        "there is room" if disk else "that is mended",
                    )
                self._skipped += 1
                return
            finally:
                self._dirty.set()
            if self._skipped:
                log.info("%s: recall lines are written again (%d skipped)", path, self._skipped)
                self._skipped = 0

    def _write(self, when: dt.datetime, data: bytes) -> None:
        fd = self._fd
        if fd is None or self._month != f"{when:%Y-%m}" or not self._still_at_path(fd):
            fd = self._open(when)
        if self._cut is not None:
            os.ftruncate(fd, self._cut)
            self._cut = None
        st = os.fstat(fd)
        if st.st_nlink > 1:  # linked while memoryd runs: the line would reach the other name too
            raise refuse(self.home.recalls_month(when), hard_links(st))
        before = st.st_size
        try:
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
        except OSError:
            try:  # cutting back frees pages, it needs none
                os.ftruncate(fd, before)
            except OSError:
                self._cut = before
            raise

    def _still_at_path(self, fd: int) -> bool:
        """Whether the month file's path still names the file fd is to; if not (removed, or
        another file or a folder put there), said in one line: the caller opens the path anew.
        A link at memory/ or recalls/ is NotRegular, refused as a link at the month file is (by
        the open), though the file the descriptor is to is still the one at the end of it."""
        path = self._path()
        try:
            there = stat_below(self.home.root, path)
        except FileNotFoundError:
            found = "removed"
        except NotRegular:
            raise
        except OSError as e:  # recalls/ made a file, say: the open says what is wrong
            found = e.strerror or str(e)
        else:
            here = os.fstat(fd)
            if (there.st_dev, there.st_ino) == (here.st_dev, here.st_ino):
                return True
            found = "replaced"
        log.warning(
            "%s: %s while memoryd held it open; recall lines go to the file at that path from now",
            path,
            found,
        )
        return False

    def _open(self, when: dt.datetime) -> int:
        old, self._fd, self._month, self._cut = self._fd, None, None, None
        if old is not None:
            try:
                os.fsync(old)
            finally:
                os.close(old)
        path = self.home.recalls_month(when)
        fd = open_below(self.home.root, path, os.O_RDWR | os.O_APPEND | os.O_CREAT, FILE_MODE)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                # A power cut tore the last line (its fsync lags): the next line starts on a line
                # of its own, not glued onto the torn one, which stats skips alone.
                os.write(fd, b"\n")
        except OSError:
            os.close(fd)
            raise
        self._fd = fd
        self._month = f"{when:%Y-%m}"
        return fd

    def _sync(self) -> None:
        with self._lock:
            fd = None if self._fd is None else os.dup(self._fd)
            month = self._month
        if fd is None:
            return
        path = self.home.recalls / f"{month}.jsonl"
        try:
            os.fsync(fd)
        except OSError as e:
            if self._unsynced is None:
                log.warning("%s: recall lines cannot be synced (%s)", path, e.strerror)
            self._unsynced = str(path)
            return
        finally:
            os.close(fd)
        if self._unsynced is not None:
            log.warning("%s: recall lines are synced again", self._unsynced)
            self._unsynced = None

    def _path(self) -> Path:
        return self.home.recalls / f"{self._month}.jsonl"

    def _flush_loop(self) -> None:
        while not self._stopping.is_set():
            self._dirty.wait()
            # Gather the lines of a short while into one fsync, and wake this thread seldom: each
            # wake-up takes the interpreter lock from the recalls.
            self._stopping.wait(SYNC_INTERVAL)
            self._dirty.clear()
            self._sync()

    def close(self) -> None:
        """fsync what was written and stop the background thread."""
        self._stopping.set()
        self._dirty.set()
        self._flusher.join()
        with self._lock:
            fd, self._fd = self._fd, None
            if fd is not None:
                try:
                    os.fsync(fd)
                except OSError as e:
                    log.warning("%s: recall lines not synced at close (%s)", self._path(), e)
                finally:
                    os.close(fd)


def _not_a_file(error: OSError) -> bool:
    """The month file's path leads to no file memoryd may open: a folder there, or recalls/ not
    a folder. A link swapped in (NotRegular) is not skipped: it is refused in its own words, as
    every write of memoryd's through a link is."""
    if isinstance(error, NotRegular):  # what stands there says which (a link, or a file)
        return error.filename is not None and not os.path.islink(error.filename)
    return error.errno in (errno.ENOTDIR, errno.EISDIR)
