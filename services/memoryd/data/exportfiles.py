"""The exports memoryd keeps in {home}/backups/: their names, which of them are memoryd's, the
removal of older ones, and a forget's reach into them.

An export is written under a name never reused (export-<time>[-N].jsonl or .md), so two exports
at once each have their own file. Only a regular file whose name holds a real time is memoryd's:
anything else there (export-20260230T..., a link, a folder) is the owner's and left alone by the
pruning and by forget. The exports made before a new one are removed, but for those younger than
FRESH_SECONDS, which another bxctl may still be reading or copying. An export is one of the files
memoryd writes, so a forget takes the forgotten text out of every export still there.

An export named more than FRESH_SECONDS after now is removed too, and logged: either the clock ran
ahead when it was made, or the clock is behind now. Unlike a backup named ahead (backupkeep.py,
which leaves it), it is never the owner's latest copy of anything in either case: the export just
written holds memory as it is now. Taken for fresh, it would stay until the clock passed its name
(months, after a boot with a bad RTC), a plaintext copy the owner was told is replaced. Yet one
this memoryd made under FRESH_SECONDS ago by the monotonic clock is fresh whatever its name says:
a clock set right minutes after an export named ahead must not take it from the bxctl reading it.
"""

import contextlib
import datetime as dt
import json
import logging
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from memoryd.data import backup, exportmd, layout, matching, notestream, scrub
from memoryd.home import FILE_MODE, Home, atomic_write, open_read
from proto.plural import counted

EXPORT_NAME = re.compile(r"^export-([0-9]{8}T[0-9]{6}Z)(?:-[0-9]{1,6})?\.(?:jsonl|md)\Z")
FRESH_SECONDS = 600  # an export younger than this may still be read or copied by its bxctl
WRITE_BYTES = 1 << 20  # an export is written a MiB at a time

log = logging.getLogger(__name__)

# The exports this memoryd made, by path, with the monotonic time each was made: fresh whatever
# the wall clock has done since. Only those under FRESH_SECONDS old are kept.
_made: dict[str, float] = {}
_made_lock = threading.Lock()
_monotonic = time.monotonic  # the clock no step of the wall clock moves


def new_file(folder: Path, now: dt.datetime, suffix: str, parts: Iterable[bytes]) -> Path:
    """parts written under a new export name in folder (never over another), whole or not at
    all: into a temporary file of the folder a MiB at a time (an export is as long as notes.md,
    which has no limit, so it is never held whole), fsync'd, then linked under the first name
    free, the folder fsync'd. An error leaves no export (Unsynced when one is left), and names
    the file by its full path. Once linked, the export is made: a temporary file that cannot be
    removed then is only logged (the start and every forget remove it)."""
    base = f"export-{now:%Y%m%dT%H%M%SZ}"
    folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        tmp = f".{base}.{suffix}.{secrets.token_hex(6)}.tmp"  # backup.MEMORYD_TEMP's shape
        try:
            try:
                _write_parts(folder_fd, tmp, parts)
            except OSError as e:
                e.filename = e.filename or tmp  # the file a failed write was writing
                raise
            path = _link_new(folder, folder_fd, tmp, base, suffix)
        except BaseException:
            _drop_temp(folder, folder_fd, tmp)
            raise
        _drop_temp(folder, folder_fd, tmp)
        _remember(path)
        try:
            os.fsync(folder_fd)
        except OSError as e:
            try:
                os.unlink(path.name, dir_fd=folder_fd)
            except FileNotFoundError:
                pass
            except OSError as left:
                said = left.strerror or left
                log.error("%s: an export whose folder cannot be synced is left: %s", path, said)
                raise Unsynced(e.errno, e.strerror, str(path)) from None
            raise
        return path
    except OSError as e:
        if isinstance(e.filename, str) and os.sep not in e.filename:
            e.filename = str(folder / e.filename)  # a name in folder (its descriptor's)
        e.filename = e.filename or str(folder / f"{base}.{suffix}")
        raise
    finally:
        os.close(folder_fd)


class Unsynced(OSError):
    """The export was linked in, its folder's fsync failed, and it could not be removed: it is
    left (filename), not synced."""


def _drop_temp(folder: Path, folder_fd: int, tmp: str) -> None:
    """Remove the export's temporary file; a failure is logged, never raised: once linked, the
    export is whole under its name, and before, the error that stopped it is the one to say."""
    try:
        os.unlink(tmp, dir_fd=folder_fd)
    except FileNotFoundError:
        pass
    except OSError as e:
        log.warning("%s: an export's temporary file not removed: %s", folder / tmp, e.strerror or e)


def _write_parts(folder_fd: int, name: str, parts: Iterable[bytes]) -> None:
    fd = os.open(
        name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE, dir_fd=folder_fd
    )
    try:
        os.fchmod(fd, FILE_MODE)
        pending = bytearray()
        for part in parts:
            pending += part
            if len(pending) >= WRITE_BYTES:
                _write_all(fd, pending)
                pending.clear()
        _write_all(fd, pending)
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytearray) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _link_new(folder: Path, folder_fd: int, tmp: str, base: str, suffix: str) -> Path:
    """tmp linked under the first export name free: a link never replaces a file, so two
    exports in the same second take two names."""
    for n in range(1, 1_000_000):
        name = f"{base}.{suffix}" if n == 1 else f"{base}-{n}.{suffix}"
        try:
            os.link(tmp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd, follow_symlinks=False)
        except FileExistsError:
            continue
        return folder / name
    raise FileExistsError(f"{folder}: no export name left for {base}")


def made_at(folder: Path, name: str) -> dt.datetime | None:
    """When memoryd made the export named name in folder, or None when memoryd did not make it:
    a name that only looks like an export (a date no clock gives, export-20260230T...), or
    anything but a regular file, is the owner's and left alone."""
    m = EXPORT_NAME.match(name)
    if not m:
        return None
    try:
        made = dt.datetime.strptime(m.group(1), "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)
        regular = stat.S_ISREG(os.lstat(folder / name).st_mode)
    except (ValueError, OSError):
        return None
    return made if regular else None


def _remember(path: Path) -> None:
    now = _monotonic()
    with _made_lock:
        for old in [p for p, t in _made.items() if now - t >= FRESH_SECONDS]:
            del _made[old]
        _made[str(path)] = now


def _made_lately(path: Path) -> bool:
    """Whether this memoryd made the export at path under FRESH_SECONDS ago (monotonic)."""
    with _made_lock:
        made = _made.get(str(path))
    return made is not None and _monotonic() - made < FRESH_SECONDS


def _remove_older(folder: Path, keep: str, now: dt.datetime) -> None:
    """Remove the exports before keep, but for those another bxctl may still be reading (named
    less than FRESH_SECONDS from now, before or after it: a clock set back a little since one
    was made leaves its name a little ahead; or made by this memoryd under FRESH_SECONDS ago,
    whatever the clock did since)."""
    for name in os.listdir(folder):
        made = made_at(folder, name)
        if name == keep or made is None:
            continue
        age = (now - made).total_seconds()
        if abs(age) < FRESH_SECONDS or _made_lately(folder / name):
            continue
        try:
            os.unlink(folder / name)
        except FileNotFoundError:
            continue  # another export removed it first
        except OSError as e:  # the export stands; this one waits for the next export
            log.warning("%s: an older export not removed: %s", folder / name, e.strerror or e)
            continue
        if age < 0:
            log.warning(
                "%s: removed, an export named %s after now (%s), replaced as the older ones are",
                folder / name,
                _span(-age),
                AHEAD,
            )


AHEAD = "either the clock ran ahead when it was made or it is behind now"


def _span(seconds: float) -> str:
    """seconds in the largest whole unit, down to minutes: 200 days, 3 hours, 11 minutes."""
    for unit, size in (("day", 86_400), ("hour", 3_600)):
        if seconds >= size:
            return counted(int(seconds // size), unit)
    return counted(int(seconds // 60), "minute")


def remove_older_exports(home: Home, keep: str, now: dt.datetime) -> None:
    """The exports before keep removed (_remove_older), a failure only logged."""
    folder = layout.backups(home)
    try:
        _remove_older(folder, keep, now)
    except OSError as e:  # the export stands; the older ones wait for the next export
        log.warning("%s: older exports not removed: %s", folder, e.strerror or e)


def exports(home: Home) -> list[Path]:
    """The exports memoryd wrote and left in backups/."""
    folder = layout.backups(home)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    return [folder / n for n in sorted(names) if made_at(folder, n) is not None]


def holding(home: Home, text: str) -> int:
    """How many exports in backups/ hold text (an item that is text, matching.py)."""
    n = 0
    for path in exports(home):
        try:
            if path.suffix == ".jsonl":
                find = scrub.needle(text, ascii_only=True)
                n += scrub.count(path, text, matching.export_holds, find) > 0
            else:
                n += exportmd.holds_in(_chunks(path), text)
        except FileNotFoundError:
            continue
    return n


def _chunks(path: Path) -> exportmd.Chunks:
    """path's bytes from its start in chunks, read afresh at each call: a markdown export is as
    long as notes.md, so it is read a chunk at a time, never whole."""

    def read() -> Iterator[bytes]:
        with _named(path), open_read(path) as f:
            yield from notestream.file_chunks(f, exportmd.CHUNK)

    return read


@contextlib.contextmanager
def _named(path: Path) -> Iterator[None]:
    """An OSError raised inside names path when it names no file itself (a failed read)."""
    try:
        yield
    except OSError as e:
        e.filename = e.filename or str(path)
        raise


def scrub_exports(home: Home, text: str, marker: str) -> int:
    """Take text out of every export in backups/: in jsonl an entry that is text goes and a note
    keeps its place with the marker, in markdown its text's block holds the marker instead
    (exportmd.py); how many exports changed. The temporary files a killed export or backup left,
    and the copies a stopped bxctl handed over, are removed first: they hold the text too, and a
    forget runs alone, so no export or backup is writing one now (backup.remove_all_leftovers).
    A markdown export is read twice, a chunk at a time: to find whether it holds text (one that
    does not is not written), then to write it scrubbed as it is read."""
    backup.remove_all_leftovers(home)
    changed = 0
    for path in exports(home):
        if path.suffix == ".jsonl":
            changed += (
                scrub.rewrite(
                    path,
                    text,
                    lambda item: matching.export_change(item, text, marker),
                    _ascii_dumps,
                    scrub.needle(text, ascii_only=True),
                )
                > 0
            )
            continue
        chunks = _chunks(path)
        try:
            if not exportmd.holds_in(chunks, text):
                continue
        except FileNotFoundError:
            continue
        with _named(path):
            atomic_write(path, exportmd.scrubbed(chunks, text, marker, []))
        changed += 1
    return changed


def _ascii_dumps(value: dict) -> str:
    return json.dumps(value, ensure_ascii=True)
