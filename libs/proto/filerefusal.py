"""What a role's file is refused as: the errors proto.files raises, and the words for what stands
where a file or folder should be.

Kept apart from the reads and writes so that every module that opens, replaces or appends (and
memoryd's and the shims' own checks of a path) names a refusal the same way, in one place.
"""

import errno
import os
import stat
from pathlib import Path

from proto.errors import ProtoError


class NotRegular(ProtoError, OSError):
    """A path a role owns is a symbolic link, or not the regular file or folder it should be.
    strerror says what it is ("a symbolic link, which is not followed"), filename where."""

    def __str__(self) -> str:
        return f"{self.filename} is {self.strerror}"


class TooLarge(ProtoError, OSError):
    """A file larger than its reader allows; strerror names the limit, filename the file."""

    def __str__(self) -> str:
        return f"{self.filename} is {self.strerror}"


class NotTakenBack(OSError):
    """A write that failed, and whose take-back failed too (the truncate or rename that would
    undo it: a disk turned read-only by the write's own I/O error): path may hold the change.
    errno, strerror, filename and so str() are the write's own (cause), so every answer built
    from them reads as before; only a caller that asks learns the file may have changed."""

    def __init__(self, path: str | os.PathLike, cause: OSError):
        super().__init__(cause.errno, cause.strerror or str(cause), cause.filename)
        self.path = Path(path)
        self.cause = cause


LINK = "a symbolic link, which is not followed"


def what_stands(st: os.stat_result, folder: bool = False) -> str:
    """What stands where a role's file (or, folder: its folder) should be, as NotRegular says it."""
    if stat.S_ISLNK(st.st_mode):
        return LINK
    if folder:
        return "not a folder"
    if stat.S_ISDIR(st.st_mode):
        return "not a file"
    if stat.S_ISFIFO(st.st_mode):
        return "a FIFO, not a regular file"
    if stat.S_ISSOCK(st.st_mode):
        return "a socket, not a regular file"
    return "not a regular file"


def hard_links(st: os.stat_result) -> str:
    """What NotRegular says of a file a role writes in place that has another name too: each
    write would change the file at that name (perhaps outside the role's folder) as well."""
    return (
        f"a file with {st.st_nlink:,} hard links, so a write to it would change the file at its "
        "other name too (give it a copy of its own: cp it to a new name, then mv that over it)"
    )


def refuse(path: str | os.PathLike, why: str) -> NotRegular:
    """The NotRegular for path, why being what_stands' words."""
    return NotRegular(errno.ELOOP, why, os.fspath(path))
