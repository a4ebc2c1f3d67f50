"""The sockets a role bound itself, and their removal at its stop: that socket and nothing else.

A configured socket path may name, by the time the role stops, a file, a folder, another
process's live socket, or a path under a folder swapped for a symbolic link. Removing "the
configured path" would delete whatever is there. So the socket is remembered right after it is
bound, with its folder, each by (device, inode), and removed only while both are still those.
"""

import logging
import os
import stat
from dataclasses import dataclass

log = logging.getLogger("proto.socketfile")


@dataclass(frozen=True)
class Bound:
    """A socket this process bound, and its folder, each by (device, inode): the stop removes that
    very socket and nothing else (not a file or another process's socket found at a configured
    path, nor anything reached through a folder swapped for a symbolic link meanwhile)."""

    path: str
    folder: tuple[int, int]
    socket: tuple[int, int]


def _open_folder(path: str) -> int:
    """The socket's folder, opened without following a symbolic link in its last part."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(os.path.dirname(path) or ".", flags)


def remember(path: str) -> Bound | None:
    """The socket just bound at path (serve_unix refused a link for its folder); None, logged,
    when it cannot be told apart (it is then left for the next start to find stale)."""
    try:
        fd = _open_folder(path)
        try:
            folder, sock = os.fstat(fd), os.lstat(os.path.basename(path), dir_fd=fd)
        finally:
            os.close(fd)
    except OSError as e:
        log.warning("%s: will not be removed at the stop: %s", path, e.strerror)
        return None
    if not stat.S_ISSOCK(sock.st_mode):
        log.warning("%s: will not be removed at the stop: not the socket this role bound", path)
        return None
    return Bound(path, (folder.st_dev, folder.st_ino), (sock.st_dev, sock.st_ino))


def remove_own(bound: Bound) -> None:
    """Remove a socket this process bound, if it is still the one at its path; anything else is
    left alone, logged. Never raises (it runs while the role stops, maybe on another error)."""
    path = bound.path
    try:
        fd = _open_folder(path)
    except OSError as e:
        log.warning("%s: not removed: its folder cannot be opened: %s", path, e.strerror)
        return
    try:
        folder = os.fstat(fd)
        if (folder.st_dev, folder.st_ino) != bound.folder:
            log.warning("%s: not removed: its folder is not the one this role bound it in", path)
            return
        name = os.path.basename(path)
        try:
            sock = os.lstat(name, dir_fd=fd)
        except FileNotFoundError:
            return
        if not stat.S_ISSOCK(sock.st_mode) or (sock.st_dev, sock.st_ino) != bound.socket:
            log.warning("%s: not removed: it is no longer the socket this role bound", path)
            return
        os.unlink(name, dir_fd=fd)
    except OSError as e:
        log.warning("%s: not removed: %s", path, e.strerror)
    finally:
        os.close(fd)
