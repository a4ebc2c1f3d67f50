"""Laying a restore's files into memory/ so that a kill leaves the home as before or as after.

The verified files wait in a staging folder inside memory/ (the same file system, so each rename
is atomic). Then one plan is written atomically to memory/.restore.json: which files to rename
into place and which to remove. That write is the point of no return: before it the home is
untouched; after it, the plan is carried out, and if memoryd is killed on the way, recover() at the
next start carries out the rest (a renamed file is no longer in the staging folder, a removed one
no longer there, so each step can be taken again). A staging folder from which nothing was laid
is what a restore killed before that point left, and is removed. The plan names the sha256 of
each file it lays and is kept in the staging folder too (restoreplan.py), so that a plan whose
staging folder was removed, or a staging folder whose plan was, is finished when it can be and
otherwise said in an ERROR, never taken for finished or for one that changed nothing. Once the
plan is carried out its copy is marked laid before the plan is dropped, so a staging folder left
after its restore finished is only removed, never carried out again (restoreplan.py).

The restore's own journal line (restored, below) is written into the staged journal before the
plan, so it is laid with the files: a kill leaves the home with both or with neither.

A failure after that point (a disk error while carrying the plan out) leaves a home that is half
the old and half the new: the plan is carried out once more at once, and if that fails too,
Unfinished is raised, and memoryd refuses every read and write of memory until a restart carries
out the rest (service.py).
"""

import datetime as dt
import errno
import json
import logging
import os
import stat
from pathlib import Path

from memoryd.data import restoreplan
from memoryd.data.backup import HANDED_OVER
from memoryd.errors import MemorydError, StartFailed
from memoryd.home import Home, atomic_write, ensure_dir, fsync_dir
from memoryd.journal.journal import Edit, Journal
from memoryd.trust.caller import OWNER
from proto.files import TooLarge
from proto.plural import counted

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


def commit(
    home: Home,
    staging: Path,
    lay: list[str],
    remove: list[str],
    archive: str | None = None,
    replaced: str | None = None,
) -> None:
    """Write the plan (the point of no return), carry it out, then drop it. An OSError means the
    home is as it was; a failure after the plan is in place is met by carrying it out once more
    at once, and when that fails too, by Unfinished. archive and replaced (names in backups/:
    the archive laid, the backup of what was here) are for what a start that cannot finish the
    plan says."""
    plan = {
        "staging": staging.name,
        "lay": lay,
        "remove": remove,
        "sha256": restoreplan.digests(staging, lay),
        "archive": None if archive is None or HANDED_OVER.fullmatch(archive) else archive,
        "replaced": os.path.basename(replaced) if replaced else None,
        restoreplan.MARKED: True,
    }
    data = json.dumps(plan).encode()
    if len(data) > restoreplan.MOST:  # a start would not read it: refused with the home untouched
        raise TooLarge(
            errno.EFBIG, f"its plan would be larger than {restoreplan.MOST:,} bytes", PLAN
        )
    restoreplan.keep_copy(staging, data)
    try:
        # A plan renamed into place whose folder's fsync then fails is kept, not taken back:
        # a crash may yet have it laid at the next start, so the restore is past the point.
        atomic_write(plan_path(home), data, undo_unsynced=False)
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
    return Journal(staged, restoring=True).append(now, edit).id


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
        return restoreplan.load(plan_path(home)).get("staging") == staging.name
    except (OSError, ValueError, AttributeError):
        return False


def carry_out(home: Home, plan: dict, kept: Path | None = None) -> None:
    """Lay the plan's files, remove those it removes, mark its copy laid, then drop the plan and
    its staging folder. NotLaid, and nothing done, when a file to lay is neither staged nor laid
    (restoreplan.py). kept is the file the plan was read from (memory/.restore.json unless its
    copy). An OSError before the plan is dropped leaves the restore unfinished (the plan, or its
    copy, is carried out again); the folder's removal failing is only said."""
    problem = restoreplan.not_laid(home.memory, plan, kept or plan_path(home))
    if problem is not None:
        raise problem
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
    restoreplan.mark_laid(staging)  # before the plan goes: a copy never outlives it as a plan
    plan_path(home).unlink(missing_ok=True)  # taken again: the first time may have dropped it
    fsync_dir(home.memory)
    restoreplan.remove_folder(staging)


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
            plan = restoreplan.load(path)
            staging = plan["staging"]
            if not (isinstance(staging, str) and staging.startswith(STAGING_PREFIX)):
                raise ValueError("no staging folder")
            if not restoreplan.well_formed(plan):
                raise ValueError("not a plan memoryd writes")
        except (OSError, ValueError, KeyError, TypeError) as e:
            log.error("%s: a restore's plan cannot be read (%s); left for the owner", path, e)
            return
        if _refused(home, plan, path) or not _finish(home, plan, path):
            return  # left for the owner, with every staging folder: one may be the plan's
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
            _without_plan(home, folder)


def _finish(home: Home, plan: dict, path: Path) -> bool:
    """Carry out the plan at path at start; False when it cannot be (said in an ERROR, the plan
    and its staging folder left as they are)."""
    _, laid, lost = restoreplan.where(home.memory, plan)
    if lost and not laid and "sha256" in plan:
        # Nothing laid, so nothing removed either (the removals come after every file is laid):
        # the home is as it was, and the plan can never be carried out.
        log.warning(
            "%s: a restore stopped after its point of no return laid none of its files, and "
            "%s no longer in its staging folder %s: the plan is dropped and the home is as it "
            "was before that restore; restore the archive again",
            path,
            counted(len(lost), "is", "are"),
            plan["staging"],
        )
        restoreplan.drop_copy(home.memory / plan["staging"])  # never found as a plan after
        path.unlink(missing_ok=True)
        fsync_dir(home.memory)
        restoreplan.remove_folder(home.memory / plan["staging"])
        return True
    if not _carried_out(home, plan, path):
        return False
    log.info("%s: finished a restore that was stopped after its point of no return", path)
    return True


def _refused(home: Home, plan: dict, path: Path) -> bool:
    """True, said in one ERROR naming the plan at path (left for the owner), when its staging
    folder is not a folder or a place it lays or removes a file holds something other than a
    regular file (unsafe): carried out, it would write or remove through a link, or fail on a
    folder at every start. A restore checks the same before it writes its plan."""
    staging = home.memory / plan["staging"]
    place = None if _folder_or_none(staging) else str(staging)
    place = place or unsafe(home, plan["lay"] + plan["remove"])
    if place is None:
        return False
    log.error(
        "%s: a restore's plan cannot be carried out (%s is not what memoryd keeps there); left "
        "for the owner: move it away, then start memoryd again (runbook: restore-from-a-backup)",
        path,
        place,
    )
    return True


def _folder_or_none(path: Path) -> bool:
    """True when nothing is at path or it is a folder (never a link to one)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return True


def _carried_out(home: Home, plan: dict, path: Path) -> bool:
    """Carry out the plan read from path at start; False when a file is not laid (NotLaid), said
    in one ERROR naming path. A disk error on the way refuses the start in one line naming the
    plan (StartFailed): served, memory/ would hold part of the archive's files and the rest as
    they were, and a write made then would be laid over when the plan is carried out again."""
    try:
        carry_out(home, plan, path)
    except restoreplan.NotLaid as e:
        log.error("%s", e)
        return False
    except OSError as e:
        where = f" ({e.filename})" if e.filename else ""
        raise StartFailed(
            f"{path}: a restore stopped after its point of no return could not be finished: "
            f"{e.strerror or e}{where}; memory/ holds part of the archive's files and the rest as "
            "they were, so memoryd does not serve it: mend the disk and start memoryd again, "
            "which carries the plan out (runbook: restore-from-a-backup)"
        ) from e
    return True


def _without_plan(home: Home, folder: Path) -> None:
    """A staging folder memory/.restore.json does not name: removed when nothing left it for
    memory/ (the restore stopped before its point of no return, or is of an older memoryd that
    kept no copy of its plan) or when its restore finished (its copy marked laid); finished from
    its copy of the plan when files did, as the plan would have been (it was written before the
    first of them left, and was removed since)."""
    if os.path.lexists(folder / restoreplan.LAID):
        _finished_leftover(folder)
        return
    plan = restoreplan.read_copy(folder)
    staged, laid, _ = restoreplan.where(home.memory, plan) if plan else ([], [], [])
    if plan is not None and not staged and plan.get(restoreplan.MARKED) is not True:
        # An older memoryd dropped the plan before its copy: with every file gone from the folder
        # the copy is most likely a finished restore's, whose removals must not be made again.
        _finished_leftover(folder)
        return
    if plan is None or not laid:
        restoreplan.remove_folder(folder)
        log.info("%s: removed, left by a restore stopped before it changed anything", folder)
        return
    copy = folder / restoreplan.COPY
    if _refused(home, plan, copy) or not _carried_out(home, plan, copy):
        return  # the folder is kept: it holds what is not laid yet
    if not staged:  # every file laid, the plan removed before its removals were all made
        log.info("%s: removed, left by a restore that had laid every file", folder)
        return
    log.warning(
        "%s: a restore stopped after its point of no return had lost its plan (%s was "
        "removed); finished from the copy of the plan in its staging folder",
        folder,
        PLAN,
    )


def _finished_leftover(folder: Path) -> None:
    """The staging folder of a restore that finished: removed, nothing in memory/ touched."""
    restoreplan.remove_folder(folder)
    log.info("%s: removed, left by a restore that had laid every file", folder)
