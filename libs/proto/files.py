"""The safe ways every role reads and writes: folders 0700, files 0600, whole-file replacement
and fsync'd appends, and never through a symbolic link.

atomic_write replaces a file whole (a temporary file in the same folder, fsync, rename, fsync the
folder): a crash leaves the old file or the new one, never half. A rename or link is made only
once its folder is fsync'd: when that fsync fails, atomic_write, create_if_missing and an append
that created its file take it back before raising, so an error always means nothing was written.
append_bytes and append_line add to a journal and fsync before returning; to a file of the
role's own (own) only when it has no other hard link, which the append would write through to (a
copy of a home made with cp -al, a hand link to a file outside it), and made 0600 when looser.
ensure_dir makes every folder it creates 0700, parents included (os.makedirs gives parents the
umask's mode); a folder that already existed is chmodded only when it is the role's own (tighten).

A role's files are what they claim to be. Each file is opened inside its folder's descriptor, the
folder opened with O_NOFOLLOW and the file with O_NOFOLLOW and O_NONBLOCK, then checked with fstat:
a symbolic link (at the file or at its folder) or anything but a regular file (a FIFO, a device)
raises NotRegular and is neither read, written nor waited on. ensure_dir refuses a link or a
non-folder where its folder should be, and sets the mode through the folder's own descriptor, so
it never chmods a folder elsewhere.

Every role imports these from here; each concern lives in a module of its own beside it:
filerefusal (the errors, and what stands where a file should be), fileopen (the open inside the
folder's descriptor), atomicwrite (replacement and creation, taken back when unsynced), appends
(the fsync'd appends). Kept here: the reads, the checks of an entry, and the folders.
"""

import errno
import os
import stat
from pathlib import Path

from proto.appends import append_bytes, append_line, tighten
from proto.atomicwrite import atomic_write, create_if_missing
from proto.fileopen import DIR_MODE, FILE_MODE, open_dir, open_file, read_at_most
from proto.filerefusal import (
    LINK,
    NotRegular,
    NotTakenBack,
    TooLarge,
    hard_links,
    refuse,
    what_stands,
)

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "LINK",
    "NotRegular",
    "NotTakenBack",
    "TooLarge",
    "append_bytes",
    "append_line",
    "atomic_write",
    "check_entry",
    "create_if_missing",
    "ensure_dir",
    "fsync_dir",
    "hard_links",
    "open_file",
    "open_read",
    "read_at_most",
    "read_file",
    "read_setting",
    "refuse",
    "tighten",
    "what_stands",
]


def read_file(path: str | os.PathLike) -> bytes:
    """The whole content of the regular file at path, in one open."""
    with os.fdopen(open_file(path, os.O_RDONLY), "rb") as f:
        return f.read()


def open_read(path: str | os.PathLike):
    """The regular file at path opened for reading in binary (a file object)."""
    return os.fdopen(open_file(path, os.O_RDONLY), "rb")


def read_setting(path: str | os.PathLike, limit: int) -> bytes:
    """An owner's settings file whole (a role's config, system.md, the starter soul.md), at most
    limit bytes. A symbolic link is followed, as the owner may keep the file anywhere, but what it
    ends at must be a regular file: a FIFO is refused without waiting for a writer, a folder or a
    device without reading it (NotRegular); a file over limit bytes is TooLarge, read no further."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = "a folder, not a file" if stat.S_ISDIR(st.st_mode) else what_stands(st)
            raise refuse(path, what)
        os.set_blocking(fd, True)
        data = read_at_most(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise TooLarge(errno.EFBIG, f"larger than {limit:,} bytes", os.fspath(path))
    return data


def check_entry(path: str | os.PathLike, folder: bool = False) -> None:
    """Refuse path unless it is missing or a real folder (folder) or regular file (not folder)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if folder and not stat.S_ISDIR(st.st_mode):
        why = (
            "a symbolic link, which is not followed"
            if stat.S_ISLNK(st.st_mode)
            else ("not a folder")
        )
        raise refuse(path, why)
    if not folder and not stat.S_ISREG(st.st_mode):
        raise refuse(path, what_stands(st))


def ensure_dir(path: str | os.PathLike, *, tighten: bool = True) -> None:
    """Create a folder and any missing parents, each 0700; a symbolic link or a non-folder where
    the folder should be is refused (NotRegular).

    tighten also sets 0700 on the folder itself when it already existed: right for a folder of
    the role's own in {home}, wrong for one it was only told to put something in (a socket in
    /tmp or /run is the owner's choice, and chmodding such a shared folder would break every
    other user of it), so there tighten=False leaves an existing folder's mode as it is."""
    path = Path(path)
    missing = []
    probe = path
    while not os.path.lexists(probe):
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:
            pass
        _chmod_dir(folder)
    if not missing:
        if tighten:
            _chmod_dir(path)
        else:
            os.close(open_dir(path))


def _chmod_dir(path: Path) -> None:
    fd = open_dir(path)
    try:
        os.fchmod(fd, DIR_MODE)
    finally:
        os.close(fd)


def fsync_dir(path: str | os.PathLike) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
