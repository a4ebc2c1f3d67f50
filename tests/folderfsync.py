"""A folder whose fsync fails (an I/O error, as a failing disk or a network file system gives)
while every other fsync runs for real: the rename or link before it has been made on the real
file system, so a test sees what is left when the caller answers."""

import errno
import os
import stat
from pathlib import Path

_real_fsync = os.fsync


def fail_folder_fsync(monkeypatch, folder: Path) -> list[int]:
    """Make every fsync of folder raise EIO from now on; the list counts the failures."""
    target = os.stat(folder)
    failed: list[int] = []

    def fsync(fd: int) -> None:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode) and (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
            failed.append(fd)
            raise OSError(errno.EIO, "Input/output error")
        _real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return failed
