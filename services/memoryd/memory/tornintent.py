"""A write intent (memory/.writing.json) torn by a kill while it was itself being written.

The intent is written before its write's rename or append (writeintent.intend), so a torn one is of
a write that never reached either: nothing in the files is its, and nothing will ever act on it
(read_intent takes it for none). Left there, it stays until some later write happens to replace
it, a half-written file memoryd says nothing of. So the hand-edit detection that runs at start and
before each write removes an intent that does not parse as JSON, and says so in one log line
naming it. One that parses is never removed here, whatever it holds: it may be a whole intent of a
write that stood, which the detection itself acts on, or the owner's, which is left for them.

Kept apart from handedit.py, which reads intents for what they say: this only asks whether the
file is whole, and the module it would join is long already.
"""

import json
import logging
import os
import stat

from memoryd.home import Home, open_file
from memoryd.memory.writeintent import INTENT_MAX, intent_path
from proto.files import read_at_most

log = logging.getLogger(__name__)


def drop_torn(home: Home) -> bool:
    """Remove the intent when it does not parse (JSON cut short, or bytes cut inside a
    character); True when it was removed. A link, FIFO or folder there, an intent too large to
    be memoryd's, or one that cannot be read is left (read_intent names what it cannot read)."""
    path = intent_path(home)
    try:
        fd = open_file(path, os.O_RDONLY)
    except OSError:  # missing, or not memoryd's regular file: not this one's to remove
        return False
    try:
        held = os.fstat(fd)
        data = read_at_most(fd, INTENT_MAX + 1)
    except OSError:
        return False
    finally:
        os.close(fd)
    if len(data) > INTENT_MAX or _parses(data):
        return False
    try:
        now = os.lstat(path)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino):
            return False  # replaced since it was read: that one is not known to be torn
        os.unlink(path)
    except FileNotFoundError:
        return False
    except OSError as e:
        log.warning("%s: a write intent that does not parse cannot be removed: %s", path, e)
        return False
    log.warning(
        "%s: removed a write intent that does not parse (%d bytes, torn by a kill while it was "
        "written; the write it was for never reached the files)",
        path,
        len(data),
    )
    return True


def _parses(data: bytes) -> bool:
    """Whether data is JSON (of any shape: only a torn file is removed)."""
    try:
        json.loads(data.decode("utf-8"))
    except RecursionError:  # deeper than the parser goes: not known to be torn
        return True
    except ValueError:  # JSONDecodeError and UnicodeDecodeError
        return False
    return True
