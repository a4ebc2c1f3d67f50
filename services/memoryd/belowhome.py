"""Reaching a path below {home} without following a symbolic link in any folder on the way.

proto.files opens a file inside its own folder with O_NOFOLLOW, which leaves every folder above
that one followed: memory/recalls/ moved to another disk and linked back (an owner freeing space)
keeps its month file's device and inode, so a descriptor held open, checked by one stat of the
path, would go on writing outside {home} through the link, though a start refuses that very link.
Here each folder below {home} is opened inside the one above it with O_NOFOLLOW, or looked at
with lstat, so a link (or anything but a folder) at any of them is refused in the start's words
(NotRegular: "… is a symbolic link, which is not followed"). {home} itself may be a link: it is
the owner's to place.
"""

import errno
import os
import stat
from pathlib import Path

from memoryd.home import DIR_MODE, FILE_MODE, NotRegular
from proto.files import refuse, what_stands

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _folders(root: Path, path: Path) -> list[Path]:
    """The folders strictly between root and path, from the top (ValueError: not below root)."""
    parts = path.relative_to(root).parts[:-1]
    return [root.joinpath(*parts[: n + 1]) for n in range(len(parts))]


def linked_folder(root: Path, path: Path) -> NotRegular | None:
    """The first folder between root and path that is a symbolic link or not a folder (as the
    NotRegular that names it), or None. A folder missing, or one that cannot be looked at, is
    None: the caller's own look at path says what is wrong there. One lstat a folder."""
    for folder in _folders(root, path):
        try:
            st = os.lstat(folder)
        except OSError:
            return None
        if not stat.S_ISDIR(st.st_mode):
            return refuse(folder, what_stands(st, folder=True))
    return None


def stat_below(root: Path, path: Path) -> os.stat_result:
    """lstat of path, refusing (NotRegular) a link or a non-folder at a folder on the way."""
    found = linked_folder(root, path)
    if found is not None:
        raise found
    return os.stat(path, follow_symlinks=False)


def open_folder(root: Path, folder: Path, *, create: bool = False) -> int:
    """A descriptor of folder (root, or below it), each folder below root opened inside the one
    above with O_NOFOLLOW: NotRegular names the first that is a link or not a folder. create
    makes the missing ones 0700 (FileNotFoundError otherwise)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    at = root
    try:
        for part in folder.relative_to(root).parts:
            at = at / part
            if create:
                try:
                    os.mkdir(part, DIR_MODE, dir_fd=fd)
                except FileExistsError:
                    pass
                else:
                    os.fsync(fd)
            try:
                below = os.open(part, _FOLDER, dir_fd=fd)
            except OSError as e:
                if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise type(e)(e.errno, e.strerror, os.fspath(at)) from None
                try:
                    st = os.stat(part, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    raise e from None
                raise refuse(at, what_stands(st, folder=True)) from None
            os.close(fd)
            fd = below
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_below(root: Path, path: Path, flags: int, mode: int = FILE_MODE) -> int:
    """A descriptor of the regular file at path, opened with flags inside its folder, reached
    from root by open_folder (its folders made 0700 when flags create the file); a link or a
    non-regular file at path is NotRegular, as proto.files.open_file has it. A file the open
    created has its folder fsync'd before this returns."""
    create = bool(flags & os.O_CREAT)
    folder = open_folder(root, path.parent, create=create)
    try:
        if create:
            os.fchmod(folder, DIR_MODE)  # memoryd's own folder, as ensure_dir tightens it
        flags |= os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(path.name, flags & ~os.O_CREAT, mode, dir_fd=folder)
            created = False
        except FileNotFoundError:
            if not create:
                raise
            fd = os.open(path.name, flags, mode, dir_fd=folder)
            created = True
        except OSError as e:
            if e.errno not in (errno.ELOOP, errno.ENXIO, errno.EOPNOTSUPP):
                raise type(e)(e.errno, e.strerror, os.fspath(path)) from None
            try:
                st = os.stat(path.name, dir_fd=folder, follow_symlinks=False)
            except OSError:
                raise e from None
            if stat.S_ISREG(st.st_mode):
                raise
            raise refuse(path, what_stands(st)) from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise refuse(path, what_stands(st))
        if created:
            try:
                os.fchmod(fd, mode)
                os.fsync(folder)
            except OSError:
                os.close(fd)
                raise
        os.set_blocking(fd, True)
        return fd
    finally:
        os.close(folder)
