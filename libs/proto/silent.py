"""Why a socket a command could not reach is silent: nothing runs there, or a process runs and is
busy.

The owner's next step differs: a role that is not running is started (scripts/stack up), one
that is busy is asked again shortly. proto.client's Unreachable says neither in a way a caller
may rely on, so the socket is looked at once more here, and told apart by the error's type alone
(its errno): no socket file, or a connect refused (ECONNREFUSED: a socket left by a process that
stopped), is not running; a connect that would wait (EAGAIN: every connection taken and the
listen queue full) or that timed out is busy, as is one accepted now (a process listens: it was
busy a moment ago).
"""

import os
import socket
import stat
from enum import Enum

PROBE_SECONDS = 1.0


class Silence(Enum):
    NO_SOCKET = "no socket"  # nothing at the path: the role never started here, or stopped
    REFUSED = "refused"  # a socket file nobody listens on: left by a role that stopped
    BUSY = "busy"  # a process listens, with no room for one more connection now
    OTHER = "other"  # not a socket, not reachable (a permission): said by the caller's own words


def silence(path: str | os.PathLike, seconds: float = PROBE_SECONDS) -> Silence:
    """What stands behind path, looked at with one connect of at most seconds."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return Silence.NO_SOCKET
    except OSError:
        return Silence.OTHER
    if not stat.S_ISSOCK(mode):
        return Silence.OTHER
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(seconds)
    try:
        probe.connect(os.fspath(path))
    except ConnectionRefusedError:
        return Silence.REFUSED
    except (FileNotFoundError, NotADirectoryError):
        return Silence.NO_SOCKET  # removed meanwhile
    except (BlockingIOError, TimeoutError):
        return Silence.BUSY
    except OSError:
        return Silence.OTHER
    finally:
        probe.close()
    return Silence.BUSY
