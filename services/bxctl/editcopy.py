"""The private copy `bxctl memory edit` hands to $EDITOR, and what becomes of it when bxctl stops.

The copy holds memory.md's or user.md's text in $TMPDIR, where a forget never reaches it, so none
is left behind without a word. SIGTERM and SIGHUP (cli.py turns each into an interrupt) while the
editor runs end the editor (subprocess kills it; Ctrl-C is the editor's own: owner_view._editor);
a copy the owner did not change is then removed, said in one line; one he changed and saved holds
his work, so it is kept and named.
A bxctl killed outright (SIGKILL, a power cut) runs no clean-up: its folder is named with its
process id and the digest of what was written into it, so the next edit removes a copy whose bxctl
is gone and which holds nothing but what it was given, and names one that was changed. Folders of
a process still running, of another user, or of another name are left as they are.
"""

import hashlib
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from proto.escape import escape
from proto.files import read_file

PREFIX = "bxctl-edit-"
# bxctl-edit-<pid>-<digest>-<tempfile's random part>: the process that made it, and the start of
# the sha256 of the text it wrote into the copy (in the name, so the folder holds the copy alone)
FOLDER = re.compile(r"\Abxctl-edit-([0-9]+)-([0-9a-f]{32})-[A-Za-z0-9_]+\Z")
DIGEST_CHARS = 32


def make_folder(text: str) -> Path:
    """A new private folder (0700) for a copy of text, named with this process's id and text's
    digest."""
    digest = _digest(text.encode("utf-8"))
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-{digest}-"))


def write_copy(copy: Path, text: str) -> None:
    """The copy, 0600, holding text."""
    fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(text.encode("utf-8"))


def remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:DIGEST_CHARS]


def _unchanged(copy: Path) -> bool:
    """Whether copy holds what bxctl wrote into it (False when that cannot be told)."""
    match = FOLDER.match(copy.parent.name)
    try:
        return match is not None and _digest(read_file(copy)) == match.group(2)
    except OSError:
        return False


def stopped(copy: Path) -> None:
    """bxctl was stopped before it sent the copy: remove it unless it holds the owner's changes,
    and say which in one line on stderr (the terminal may be gone after SIGHUP)."""
    shown = escape(str(copy), markup=False)
    if _unchanged(copy) or not os.path.lexists(copy):
        remove(copy.parent)
        line = f"bxctl: the copy of {copy.name} made for the editor was removed"
    else:
        line = f"bxctl: your copy, with changes never sent, is kept at {shown}"
    try:
        print(line, file=sys.stderr)
    except OSError:
        pass


def _gone(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's process: running
        return False
    return False


def left_by_killed() -> list[Path]:
    """Remove the copies left by a bxctl edit killed outright (its process gone) that hold only
    what they were given; the copies that hold changes, to be named."""
    kept: list[Path] = []
    base = Path(tempfile.gettempdir())
    try:
        entries = sorted(os.listdir(base))
    except OSError:
        return []
    for entry in entries:
        match = FOLDER.match(entry)
        if match is None or not _gone(int(match.group(1))):
            continue
        folder = base / entry
        try:
            st = os.lstat(folder)
        except OSError:
            continue
        if not os.path.isdir(folder) or os.path.islink(folder) or st.st_uid != os.getuid():
            continue
        copies = [folder / n for n in ("memory.md", "user.md") if os.path.lexists(folder / n)]
        changed = [c for c in copies if not _unchanged(c)]
        if changed:
            kept.extend(changed)
        else:
            remove(folder)
    return kept


def name_left() -> None:
    """Clear away what killed edits left; one line on stderr for each copy that holds changes."""
    for copy in left_by_killed():
        shown = escape(str(copy), markup=False)
        print(
            f"bxctl: a copy left by an edit that was stopped holds changes never sent: {shown}"
            " (send what you want of it with bxctl memory edit, then remove it)",
            file=sys.stderr,
        )
