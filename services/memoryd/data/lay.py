"""Laying a restore's files into memory/ so that a kill leaves the home as before or as after.

The verified files wait in a staging folder inside memory/ (the same file system, so each rename
is atomic). Then one plan is written atomically to memory/.restore.json: which files to rename
into place and which to remove. That write is the point of no return: before it the home is
untouched; after it, the plan is carried out, and if memoryd is killed on the way, recover() at the
next start carries out the rest (a renamed file is no longer in the staging folder, a removed one
no longer there, so each step can be taken again). A staging folder without a plan is what a
restore killed before that point left, and is removed.

The restore's own journal line (restored, below) is written into the staged journal before the
plan, so it is laid with the files: a kill leaves the home with both or with neither.

A failure after that point (a disk error while carrying the plan out) leaves a home that is half
the old and half the new: the plan is carried out once more at once, and if that fails too,
Unfinished is raised, and memoryd refuses every read and write of memory until a restart carries
out the rest (service.py).
"""

import datetime as dt
import json
import logging
import os
import shutil
import stat
from pathlib import Path

from memoryd.data.backup import HANDED_OVER
from memoryd.errors import MemorydError
from memoryd.home import Home, atomic_write, ensure_dir, fsync_dir, read_file
from memoryd.journal.journal import Edit, Journal
from memoryd.trust.caller import OWNER

log = logging.getLogger(__name__)

PLAN = ".restore.json"
STAGING_PREFIX = ".restore-"


class Unfinished(MemorydError):
    """A restore stopped after its point of no return, and carrying out its plan again failed
    too: the home is part old, part new until a restart finishes it."""


def plan_path(home: Home) -> Path:
    return home.memory / PLAN


def new_staging(home: Home) -> Path:
    ensure_dir(home.memory)  # removed by hand while memoryd ran: a restore is what mends that
    folder = home.memory / f"{STAGING_PREFIX}{os.urandom(6).hex()}"
    os.mkdir(folder, 0o700)
    return folder


def _inside(home: Home, rel: str) -> Path:
    path = home.memory.joinpath(*rel.split("/"))
    if ".." in rel.split("/") or rel.startswith("/"):
        raise ValueError(f"not a memory file: {rel!r}")
    return path


def commit(home: Home, staging: Path, lay: list[str], remove: list[str]) -> None:
    """Write the plan (the point of no return), carry it out, then drop it. An OSError means the
    home is as it was; a failure after the plan is in place is met by carrying it out once more
    at once, and when that fails too, by Unfinished."""
    plan = {"staging": staging.name, "lay": lay, "remove": remove}
    try:
        # A plan renamed into place whose folder's fsync then fails is kept, not taken back:
        # a crash may yet have it laid at the next start, so the restore is past the point.
        atomic_write(plan_path(home), json.dumps(plan).encode(), undo_unsynced=False)
    except OSError:
        if not committed(home, staging):
            raise
    try:
        carry_out(home, plan)
    except OSError as e:
        log.warning("%s: stopped part way (%s); carrying it out again", plan_path(home), e)
        try:
            carry_out(home, plan)
        except OSError as again:
            raise Unfinished(again.strerror or str(again)) from None


def restored(
    staged: Home, now: dt.datetime, name: str, manifest: dict, replaced: str | None
) -> str:
    """Append the restore's own line to the staged journal: action restore, no file, and
    "restored": the archive's name in backups/ (None for the copy bxctl handed over, removed
    after), its manifest's time and memoryd, and the name of the backup of what the home held
    (None when it held no memory); names, never the home's paths. `bxctl memory log` lists it,
    so the owner who wonders where an edit went finds the restore that replaced it and the
    archive that holds it. Its id."""
    said = {
        "archive": None if HANDED_OVER.fullmatch(name) else name,
        "made": manifest.get("created"),
        "by": manifest.get("memoryd"),
        "replaced": os.path.basename(replaced) if replaced else None,
    }
    edit = Edit(
        **OWNER.head(),
        action="restore",
        file=None,
        to=None,
        before=[],
        after=[],
        notes=[],
        restored=said,
    )
    return Journal(staged).append(now, edit).id


def unsafe(home: Home, rels: list[str]) -> str | None:
    """The first place a file is to be laid or removed that holds something other than a regular
    file (a folder, a link), or whose folder is not one: the plan could not be carried out."""
    for rel in rels:
        path = home.memory.joinpath(*rel.split("/"))
        for place, want in ((path.parent, stat.S_ISDIR), (path, stat.S_ISREG)):
            try:
                st = os.lstat(place)
            except FileNotFoundError:
                continue
            if not want(st.st_mode):
                return str(place)
    return None


def committed(home: Home, staging: Path) -> bool:
    """True when the plan naming staging was written (the restore is past its point of no
    return)."""
    try:
        return json.loads(read_file(plan_path(home))).get("staging") == staging.name
    except (OSError, ValueError, AttributeError):
        return False


def carry_out(home: Home, plan: dict) -> None:
    staging = home.memory / plan["staging"]
    folders = {home.memory}
    for rel in plan["lay"]:
        src = staging / "memory" / rel
        dest = _inside(home, rel)
        if os.path.lexists(src):
            ensure_dir(dest.parent)
            os.replace(src, dest)
        folders.add(dest.parent)
    for rel in plan["remove"]:
        dest = _inside(home, rel)
        try:
            os.unlink(dest)
        except FileNotFoundError:
            pass
        folders.add(dest.parent)
    for folder in sorted(folders):
        if folder.is_dir():
            fsync_dir(folder)
    plan_path(home).unlink(missing_ok=True)  # taken again: the first time may have dropped it
    fsync_dir(home.memory)
    shutil.rmtree(staging, ignore_errors=True)


def recover(home: Home) -> None:
    """At start: finish a restore whose plan was written; drop staging folders without one and
    the temporary files of a rewrite a kill stopped; make backups/ if it is missing (0700)."""
    try:
        ensure_dir(home.root / "backups")
    except OSError as e:
        log.warning("%s: cannot be made (%s); backups will fail", home.root / "backups", e.strerror)
    path = plan_path(home)
    if os.path.lexists(path):
        try:
            plan = json.loads(read_file(path))
            staging = plan["staging"]
            if not (isinstance(staging, str) and staging.startswith(STAGING_PREFIX)):
                raise ValueError("no staging folder")
        except (OSError, ValueError, KeyError, TypeError) as e:
            log.error("%s: a restore's plan cannot be read (%s); left for the owner", path, e)
            return
        carry_out(home, plan)
        log.info("%s: finished a restore that was stopped after its point of no return", path)
    if not home.memory.is_dir():
        return
    for folder in (home.edits, home.recalls):
        for tmp in folder.glob(".*.tmp") if folder.is_dir() else ():
            tmp.unlink(
                missing_ok=True
            )  # a forget's rewrite that a kill stopped: the month is whole
            log.info("%s: removed a temporary file left by a crash", tmp)
    for folder in home.memory.iterdir():
        if folder.name.startswith(STAGING_PREFIX) and not folder.is_symlink():
            shutil.rmtree(folder, ignore_errors=True)
            log.info("%s: removed, left by a restore stopped before it changed anything", folder)
