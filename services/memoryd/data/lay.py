"""Laying a restore's files into memory/ so that a kill leaves the home as before or as after.

The verified files wait in a staging folder inside memory/ (the same file system, so each rename
is atomic). Then one plan is written atomically to memory/.restore.json: which files to rename
into place and which to remove. That write is the point of no return: before it the home is
untouched; after it, the plan is carried out, and if memoryd is killed on the way, recover() at the
next start carries out the rest (a renamed file is no longer in the staging folder, a removed one
no longer there, so each step can be taken again). A staging folder without a plan is what a
restore killed before that point left, and is removed.
"""

import json
import logging
import os
import shutil
from pathlib import Path

from memoryd.home import Home, atomic_write, ensure_dir, fsync_dir, read_file

log = logging.getLogger(__name__)

PLAN = ".restore.json"
STAGING_PREFIX = ".restore-"


def plan_path(home: Home) -> Path:
    return home.memory / PLAN


def new_staging(home: Home) -> Path:
    folder = home.memory / f"{STAGING_PREFIX}{os.urandom(6).hex()}"
    os.mkdir(folder, 0o700)
    return folder


def _inside(home: Home, rel: str) -> Path:
    path = home.memory.joinpath(*rel.split("/"))
    if ".." in rel.split("/") or rel.startswith("/"):
        raise ValueError(f"not a memory file: {rel!r}")
    return path


def commit(home: Home, staging: Path, lay: list[str], remove: list[str]) -> None:
    """Write the plan (the point of no return), carry it out, then drop it."""
    plan = {"staging": staging.name, "lay": lay, "remove": remove}
    atomic_write(plan_path(home), json.dumps(plan).encode())
    carry_out(home, plan)


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
    os.unlink(plan_path(home))
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
