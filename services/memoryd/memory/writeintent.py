"""memory/.writing.json: the intent of the write in progress, its journal fields written before
the write's file is renamed into place (or its note appended), so that a kill between the rename
and the journal line is told apart from a hand edit at the next start (handedit.py says how).

One write, no fsync: it only has to survive a killed process, not a power cut. Written, read and
removed like every file memoryd keeps: never through a link, never waiting on a FIFO.

Why a module of its own: the store's writes (store.py, notewrites.py, failedwrite.py) note and
drop it, the start and the forget read it, and handedit.py only decides what it means.
"""

import contextlib
import errno
import json
import logging
import os
import stat
from pathlib import Path

from pydantic import ValidationError

from memoryd.home import Home, NotRegular, check_entry, open_file
from memoryd.journal import scan
from memoryd.journal.journal import Edit, Journal
from proto.files import read_at_most

# handedit.py's logger: what is said of the intent are its lines, and keep its name.
log = logging.getLogger("memoryd.memory.handedit")

INTENT_NAME = ".writing.json"


def intent_path(home: Home) -> Path:
    return home.memory / INTENT_NAME


def intend(home: Home, fields: dict, notes: tuple[int, str] | None = None) -> None:
    """Note the journal fields of the write about to be renamed into place, or (notes: the
    size of notes.md before, and the text appended) of the note about to be appended. Written
    like every file memoryd keeps: never through a link, never waiting on a FIFO; anything but a
    regular file there is NotRegular, naming the path."""
    value: dict = {"fields": fields}
    if notes is not None:
        value["notes_at"], value["block"] = notes
    data = json.dumps(value, ensure_ascii=False).encode("utf-8")
    path = intent_path(home)
    try:
        fd = open_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    except OSError as e:
        # A folder (EISDIR) or a FIFO without a reader (ENXIO): say what is there, and where.
        if e.errno in (errno.EISDIR, errno.ENXIO):
            check_entry(path)
        raise
    try:
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
    finally:
        os.close(fd)


def forget(home: Home) -> None:
    """The write is journalled or taken back: its intent no longer stands. Only a regular file
    is removed: a folder or FIFO there is not memoryd's, and is left for the owner to see."""
    path = intent_path(home)
    try:
        if stat.S_ISREG(os.lstat(path).st_mode):
            os.unlink(path)
    except OSError:
        pass


INTENT_MAX = 1_048_576


def read_intent(home: Home) -> dict | None:
    """The intent of the last write, or None (missing, torn, too large, not an object; a link,
    FIFO or folder there is named in a log line and not read)."""
    path = intent_path(home)
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as e:
        log.warning("%s: not read: %s", path, e if isinstance(e, NotRegular) else e.strerror)
        return None
    try:
        data = read_at_most(fd, INTENT_MAX + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > INTENT_MAX:
        return None
    try:
        value = json.loads(data.decode("utf-8"))
        # What memoryd wrote encodes again; with a lone surrogate in it, it cannot be journalled.
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (ValueError, RecursionError):  # UnicodeDecodeError and -EncodeError are ValueErrors
        return None
    if isinstance(value, dict) and isinstance(value.get("fields"), dict):
        return value
    return None


# How many of the journal's latest lines of a file are looked through for a write's intent. An
# intent outlives its journal line only when a kill comes between the two, and then every write
# of memoryd's replaces it; until then only hand edits, one line a start at most, come after it.
INTENT_LINES = 64


def journalled(journal: Journal, edit: Edit) -> bool:
    """Whether one of the journal's latest lines of edit's file is edit (its fields, whatever
    its id, time and recovered mark): the write it is the intent of stood and is journalled."""
    if edit.to is None:
        return False
    fields = edit.dump()
    fields.pop("recovered", None)
    with contextlib.closing(scan.lines_to(journal.month_files(), edit.to)) as lines:
        for n, (_, _, record) in enumerate(lines):
            line = record.dump()
            if all(line.get(k) == v for k, v in fields.items()):
                return True
            if n + 1 >= INTENT_LINES:
                break
    return False


def intended_edit(intent: dict | None) -> Edit | None:
    """The edit an intent holds, or None when it holds none (a damaged or foreign file)."""
    if intent is None:
        return None
    try:
        return Edit.model_validate(intent["fields"])
    except ValidationError:
        return None
