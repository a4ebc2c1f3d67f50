"""What a restore's plan (lay.py) has laid, told from the files themselves, so that a plan or a
staging folder that no longer matches the home is never carried out as if it did.

Both leftovers of a restore killed after its point of no return are hidden names in memory/
that look like junk, and either may be removed before the next start. Taking the plan at its
word then laid nothing of a staging folder that was gone (a file missing from it was taken as
laid), removed the files of the home the plan would have removed, and said the restore had
finished; and a staging folder whose plan was gone was taken for one left before that point and
removed, though files had left it for memory/. Either way memory/ was half the archive and half
the home, and nothing said so.

So the plan names the sha256 of each file it lays, and a copy of it is kept in the staging
folder: a file is laid when it is still staged (a rename lays it) or its place in memory/ holds
those bytes. A plan with a file that is neither is not carried out (NotLaid: nothing more laid
or removed, the ERROR names the files not laid and the way back), and a staging folder whose
files have begun to leave it is finished from its copy rather than removed.

A copy must not outlive its plan as one: a staging folder the start finds after its restore
finished (its removal failed, or a kill came first) would be finished again, and its removals
would delete the files memoryd wrote since (a recall log, a staged write), or the files written
since over those it laid would be said as a restore half done. So once a plan is carried out its
copy is renamed laid.json, before the plan itself is dropped (mark_laid): a copy named plan.json
with no plan beside it is then always of a restore not yet carried out, and a folder holding
laid.json is a finished restore's leftover, only removed. An older memoryd dropped the plan
first; its copy (without MARKED) is taken as finished once no file is left staged.

A plan names only the files memoryd itself lays and removes (layout.memory_files): the root
files and the months of edits/ and recalls/, so that every name is in memory/ or a folder of it
the start refuses as a link. Any other name, though it climbs out of nothing, may walk through a
link the owner keeps in memory/ (a hand-edited plan then removed or wrote a file outside it), or
name what no unlink removes (a folder, a name under a file, one too long), which made every start
fail with an error naming no plan.

Both the plan and its copy are read no further than MOST bytes: one memoryd writes names the
memory files and a digest each, far less, and a file grown past that (damage, a copy gone wrong)
is refused by its size rather than read whole at every start.
"""

import hashlib
import json
import logging
import os
import re
import shutil
from pathlib import Path

from memoryd.data import layout
from memoryd.errors import MemorydError
from memoryd.home import MONTH_FILE, fsync_dir, open_read
from proto.files import open_file, read_at_most
from proto.plural import counted

log = logging.getLogger(__name__)

COPY = "plan.json"  # in the staging folder, beside its memory/ (an archive's files are under it)
LAID = "laid.json"  # the copy once its plan was carried out
MARKED = "marks_laid"  # in a plan whose copy is renamed LAID before the plan is dropped
# The staging folder's name as lay.new_staging makes it: one name inside memory/, never a path
# that climbs out of it (a hand-edited plan whose staging named ../.. had the start remove a
# folder outside memory/).
STAGING_NAME = re.compile(r"\.restore-[0-9a-f]{12}")
MOST = 1 << 20  # bytes of a plan or its copy: ~300 years of monthly files with their digests
NAMED = 5  # files named in the ERROR, then a count
MONTH_FOLDERS = ("edits", "recalls")  # the folders of memory/ whose month files a plan names


class Oversized(ValueError):
    """A plan or copy larger than MOST: not one memoryd writes."""


class NotLaid(MemorydError):
    """A restore's plan names a file that is neither in its staging folder nor laid: the plan
    cannot be carried out, and nothing more is laid or removed."""


def digests(staging: Path, lay: list[str]) -> dict[str, str]:
    """The sha256 of each staged file to lay (rel: hex), read a chunk at a time."""
    return {rel: _sha256(staging / "memory" / rel) for rel in lay}


def _sha256(path: Path) -> str:
    with open_read(path) as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def keep_copy(staging: Path, data: bytes) -> None:
    """The plan's copy (data, the plan as written) in the staging folder, written (and synced)
    before the plan itself: a new name in a new folder, so a kill that leaves it torn left no
    plan either (the home as it was), and a torn copy is read as none."""
    fd = os.open(
        staging / COPY, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
    )
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    fsync_dir(staging)


def mark_laid(staging: Path) -> None:
    """The copy renamed LAID (and the folder synced), once every file is laid and every removal
    made: done before the plan is dropped, so that no copy is found as a plan after its restore
    finished. Nothing to do when the folder or its copy is gone (an older memoryd's plan)."""
    try:
        os.replace(staging / COPY, staging / LAID)
    except FileNotFoundError:
        return
    fsync_dir(staging)


def drop_copy(staging: Path) -> None:
    """The copy removed (and the folder synced) before a plan that laid nothing is dropped."""
    try:
        os.unlink(staging / COPY)
    except FileNotFoundError:
        return
    fsync_dir(staging)


def remove_folder(folder: Path) -> None:
    """Remove a restore's staging folder; a failure is said (one WARNING naming the folder and
    the first path that would not go): what is left is removed at the next start."""
    failed: list[tuple[str, BaseException]] = []

    def note(_func, path, exc_info) -> None:
        if not isinstance(exc_info[1], FileNotFoundError):
            failed.append((path, exc_info[1]))

    shutil.rmtree(folder, onerror=note)
    if failed:
        path, e = failed[0]
        log.warning(
            "%s: a restore's staging folder could not be removed (%s: %s); the next start "
            "removes what is left",
            folder,
            path,
            getattr(e, "strerror", None) or e,
        )


def load(path: Path):
    """The JSON at path (a plan or its copy), read no further than MOST bytes: Oversized past
    them, ValueError when it is not JSON, OSError when it cannot be read."""
    fd = open_file(path, os.O_RDONLY)
    try:
        data = read_at_most(fd, MOST + 1)
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if len(data) > MOST:
        raise Oversized(f"not a plan memoryd writes: {max(size, len(data)):,} bytes")
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("nested too deep") from None


def read_copy(staging: Path) -> dict | None:
    """The plan kept in a staging folder, or None (a restore killed before it was written, one
    of an older memoryd, or one that cannot be read; one too large is said)."""
    try:
        plan = load(staging / COPY)
    except Oversized as e:
        log.warning("%s: %s; read as no plan", staging / COPY, e)
        return None
    except (OSError, ValueError):
        return None
    if not (isinstance(plan, dict) and plan.get("staging") == staging.name):
        return None
    return plan if well_formed(plan) else None


def well_formed(plan) -> bool:
    """A plan as memoryd writes it: its lists of names memoryd's own files have, and (since
    digests were kept) a digest for each file to lay."""
    if not isinstance(plan, dict) or not isinstance(plan.get("staging"), str):
        return False
    if not STAGING_NAME.fullmatch(plan["staging"]):
        return False
    lists = (plan.get("lay"), plan.get("remove"))
    if not all(isinstance(x, list) and all(memoryd_name(r) for r in x) for x in lists):
        return False
    sums = plan.get("sha256")
    return sums is None or (isinstance(sums, dict) and all(r in sums for r in plan["lay"]))


def memoryd_name(rel) -> bool:
    """A name restore lays or removes (layout.memory_files, without memory/): one of the root
    files, or a month file of edits/ or recalls/. Nothing else is memoryd's to lay or remove."""
    if not isinstance(rel, str):
        return False
    if rel in layout.ROOT_FILES:
        return True
    folder, _, name = rel.partition("/")
    return folder in MONTH_FOLDERS and MONTH_FILE.match(name) is not None


def where(memory: Path, plan: dict) -> tuple[list[str], list[str], list[str]]:
    """The plan's files to lay as (still staged, laid, neither). A plan without digests (an older
    memoryd's) takes a file not staged as laid while its staging folder is there, and as neither
    when the folder is gone (nothing then tells)."""
    staging = memory / plan["staging"]
    sums = plan.get("sha256")
    staged: list[str] = []
    laid: list[str] = []
    neither: list[str] = []
    for rel in plan["lay"]:
        if os.path.lexists(staging / "memory" / rel):
            staged.append(rel)
        elif sums is None:
            (laid if os.path.isdir(staging) else neither).append(rel)
        elif _holds(memory.joinpath(*rel.split("/")), sums[rel]):
            laid.append(rel)
        else:
            neither.append(rel)
    return staged, laid, neither


def _holds(path: Path, digest: str) -> bool:
    try:
        return _sha256(path) == digest
    except (OSError, ValueError):  # missing, not a regular file, unreadable: not laid
        return False


def not_laid(memory: Path, plan: dict, where_is: Path) -> NotLaid | None:
    """NotLaid naming what cannot be laid and the way back, or None when every file is staged
    or laid. where_is is the file that holds the plan (memory/.restore.json or its copy)."""
    _, laid, neither = where(memory, plan)
    if not neither:
        return None
    staging = memory / plan["staging"]
    why = (
        f"its staging folder {staging.name} is gone"
        if not os.path.isdir(staging)
        else f"its staging folder {staging.name} has lost them"
    )
    if "sha256" in plan:
        held = (
            f"{_named(neither)} {'was' if len(neither) == 1 else 'were'} not laid and {why}, so "
            f"memory/ holds {_named(laid) if laid else 'none'} of the archive's files and the "
            "rest as they were"
        )
    else:  # an older memoryd's plan: what was laid cannot be told
        held = f"{why}, so memory/ may hold some of the archive's files and the rest as they were"
    backups = memory.parent / "backups"
    archive, replaced = plan.get("archive"), plan.get("replaced")
    again = f"bxctl memory restore --replace {backups / archive if archive else 'ARCHIVE'}"
    back = f" (what was here before it is in {backups / replaced})" if replaced else ""
    # once restored again, the folder is a stale one: its files must not be laid over the new
    tidy = f", then remove {staging}" if os.path.isdir(staging) else ""
    return NotLaid(
        f"{where_is}: a restore stopped after its point of no return cannot be finished: {held}; "
        f"nothing more was laid or removed. Restore the archive again ({again}){back}{tidy} "
        "(runbook: restore-from-a-backup)"
    )


def _named(rels: list[str]) -> str:
    shown = ", ".join(rels[:NAMED])
    if len(rels) > NAMED:
        shown += f" and {counted(len(rels) - NAMED, 'other')}"
    return shown
