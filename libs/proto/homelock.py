"""An exclusive lock a role holds on its own data for as long as it runs, so that two instances
of one role never serve the same files (each with its own writer over one ledger, one session
log). The socket's probe alone cannot tell: a live server too busy to accept looks like no server.

The lock is flock on a folder the role alone writes, or on a file of its own where the folder is
locked by others for their own purposes (memoryd locks a home it shares, bxctl sessions/ while it
lays sessions). flock goes with the descriptor, so a process killed by any means leaves the lock
free for the next start. memoryd's own home lock predates this module and has its own messages.
"""

import fcntl
import os
from pathlib import Path

from proto.errors import ProtoError


class HeldElsewhere(ProtoError):
    """Another live process holds the lock: this one must not start."""


class CannotLock(ProtoError):
    """The folder or file to lock cannot be opened or locked at all."""


def hold(path: Path | str, role: str, *, folder: bool) -> int:
    """The descriptor holding an exclusive lock on path, a folder (opened without following a
    link) or a file (made 0600 if missing); keep it open for the process's life.

    HeldElsewhere when another process holds it, CannotLock for any other failure: one line each.
    """
    if folder:
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    else:
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as e:
        raise CannotLock(f"cannot open {path} to lock it: {e.strerror or e}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if isinstance(e, BlockingIOError):
            raise HeldElsewhere(
                f"another {role} is running (it holds the lock on {path}); stop it first"
            ) from None
        raise CannotLock(f"cannot lock {path}: {e.strerror or e}") from None
    return fd
