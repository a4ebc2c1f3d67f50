"""bxctl memory restore: lay a verified backup into the home, whole or not at all.

The archive (a file in {home}/backups/, where bxctl puts it) is read whole and checked against its
manifest into a staging folder before anything is touched (archive.verify): its core files must be
there and its counts must be what its files hold. Then a home that holds anything the lay would
replace or remove (entries, notes, the journal, pending writes, the recall log, a soul.md other
than the starter: layout.held) is refused unless replace, which first writes what is there to a
backup of its own (held on the writer, written off it) and says where; if that backup fails,
nothing is laid. Then, on the writer thread, with the recall log held still (judged again, and
backed up again if memory was written meanwhile), the files are laid by lay.py (a kill leaves
before or after; a disk error on the way is met by laying them again at once, and if that fails
too, memoryd refuses memory until a restart finishes it). Session records forgotten in the home
before stay forgotten (their logs are not restored): their keys are added to the staged
forgotten.jsonl before the plan is written, so they are laid with it. So are the digests of the
texts the home forgot, and the staged journal gets a forget line naming each key and digest so
added (leftout.carried_over: the home's own forget lines go with its journal, and a damaged line
of forgotten.jsonl falls back on the journal's); and the texts the home forgot after the archive
was made are taken out of the staged files first (leftout.py), so that nothing forgotten comes
back, and the answer says how many entries and notes were left out. The index follows
(purge.after_restore): notes.md is indexed again from its start, the rows of every key the
restored forgotten.jsonl lists are deleted, and so is what the index read of each log the archive
holds that the home lacks (replacedlogs.py: bxctl lays the archive's copy there, read anew); what
of that fails is said in the answer, after the files restored. Session logs in an archive are
checked (hashed), never staged or laid: sessions/ is loopd's (memoryd reads it only). A notes.md
header laxer than the archive's own journal line of its note is laid as strict as that line
(notesclaim.py), and the answer names it. The staged
writes the home's forgets took away are named by the carried-over forget line too (those the
staged journal does not resolve), so the restored home does not say them lost. No edit or pending
id the owner may have been shown is given again: before laying, the highest of each day the
home's journal and pending.jsonl hold is kept as handed out (an earlier restore laid them, so no
copy of the ids handed out here may name them), the restore's lines go on after those, and once
laid they are kept as handed out too.
"""

import contextlib
import datetime as dt
import logging
import os
import re
import shutil
import time
from dataclasses import dataclass

from memoryd.config import PACKAGED_SOUL, read_soul_starter
from memoryd.data import (
    backup,
    idsrenamed,
    lay,
    layout,
    leftout,
    notesclaim,
    recalllog,
    snapshot,
)
from memoryd.data.archive import Damaged, verify
from memoryd.data.purge import after_restore
from memoryd.data.replacedlogs import archived
from memoryd.errors import AdminRefused, MemorydError
from memoryd.home import Home, ensure_dir
from memoryd.journal import forgotpending, forgotten, idform, scan, twice
from memoryd.journal.journal import Journal
from memoryd.journal.linefile import all_ids
from memoryd.journal.mapfile import finditer, mapped
from memoryd.trust import risen
from proto.plural import counted

log = logging.getLogger(__name__)

# The files memoryd creates at start and every backup it makes holds: an archive without them is
# refused, as memoryd cannot write into a home that lacks them.
CORE = ("soul.md", "memory.md", "user.md", "notes.md")
# The id a journal line starts with, as memoryd writes it (a damaged line's too: it was shown).
LINE_ID = re.compile(
    rb'^(?:\xef\xbb\xbf)?[ \t]*\{"id": "(' + idform.DAY_B + rb")-(" + idform.NUMBER_B + rb')"',
    re.M,
)


def has_memory(store) -> str | None:
    """What memory the store's home holds that a restore would replace or remove (layout.held),
    said in a few words, or None when it holds none."""
    return layout.held(store.home, _starter(store))


def _starter(store) -> bytes | None:
    """The soul.md starter memoryd writes into a new home (None when it cannot be read: any
    soul.md is then the owner's)."""
    if store.soul_starter is None:
        return None
    try:
        return read_soul_starter(store.soul_starter)
    except (MemorydError, OSError):
        return None


@dataclass
class Laid:
    manifest: dict
    before: str | None  # the backup of what was there (replace)
    waited: float
    index: str  # what became of the index (and of what did not finish after the files were laid)
    edit: str | None = None  # the journal line that says the memory was restored
    since: tuple[str, ...] = ()  # keys forgotten here since the archive was made, carried over
    # What was laid, counted as a backup counts (the texts forgotten since left out, no session
    # record: bxctl lays the logs after); the manifest's counts are the archive's.
    counts: dict | None = None


@dataclass
class Order:
    """What _lay is given: the archive restored and how, and the backup made before."""

    name: str  # in backups/
    manifest: dict
    replace: bool
    seen: list | None  # the signature of the files first backed up
    first: str | None  # the path of that backup


def archive_path(home: Home, name: str):
    if not layout.NAME.fullmatch(name):
        raise AdminRefused(f"refused: {name[:64]!r} is not the name of a file in backups/")
    path = layout.backups(home) / name
    if not path.is_file() or path.is_symlink():
        raise AdminRefused(f"refused: backups/ holds no archive {name}")
    return path


def run(service, name: str, replace: bool) -> Laid:
    """Restore the archive backups/name (on a reader: the writer is taken only to hold the files
    for the backup of what is there, and to lay the new ones)."""
    home: Home = service.store.home
    path = archive_path(home, name)
    staging = lay.new_staging(home)
    first = None
    try:
        verified = verify(path, lambda m: staging / m if m.startswith("memory/") else None)
        members = [m for m in verified.staged if m.startswith("memory/")]
        for core in CORE:
            if f"memory/{core}" not in members:
                raise Damaged(
                    f"refused: the archive holds no {core}; it is not a whole backup (every "
                    f"backup memoryd makes holds {', '.join(CORE)})"
                )
        _check_counts(verified.manifest.get("counts", {}), staging, members)
        strict = notesclaim.make_strict(Home(staging))  # no header laxer than its journal line
        # taken (show and undo refuse such an id, so it cannot make them lie), and said
        held_twice = twice.of_archive(Journal(Home(staging)))
        first, seen = _back_up_first(service, replace)
        order = Order(name, verified.manifest, replace, seen, first)
        again, waited, stopped, said, (edit, since, counts) = service._writer.submit(
            0, _lay, service, staging, order
        ).result()
    except OSError as e:
        if lay.committed(home, staging):  # past its plan (its read failed in lay.commit)
            _refuse_until_restart(service, e.strerror or str(e))
            raise AdminRefused(
                f"refused: the restore stopped part way ({e.strerror or e}); memoryd refuses "
                "memory until it is restarted, which finishes the restore (restart it)"
            ) from None
        shutil.rmtree(staging, ignore_errors=True)
        raise AdminRefused(
            f"refused: the restore failed ({e.strerror or e}); the home is as it was"
            + (f" (and backed up in {first})" if first else "")
        ) from None
    except BaseException:
        if not lay.committed(home, staging):
            shutil.rmtree(staging, ignore_errors=True)
        raise
    if again is not None and first is not None:
        # written again on the writer because memory changed meanwhile: the first is stale
        with contextlib.suppress(OSError):
            os.unlink(first)
    if stopped is not None:
        raise AdminRefused(
            f"refused: the restore stopped part way ({stopped}), and again when tried once more; "
            "memoryd refuses memory until it is restarted, which finishes the restore (restart it)"
            + (f"; what was here is backed up in {again or first}" if again or first else "")
        )
    said = "; ".join(x for x in (strict.said(), held_twice, said) if x)
    return Laid(verified.manifest, again or first, waited, said, edit, tuple(since), counts)


def _check_counts(said: dict, staging, members: list[str]) -> None:
    """The manifest's counts against the staged files, counted as a backup counts them."""
    snap = snapshot.of_files([(m, staging / m) for m in members])
    try:
        found = backup.counts(snap, None)
        # an older memoryd counted notes another way (backup.notes_said_before)
        older = backup.notes_said_before(snap)
    finally:
        snap.close()
    for key in ("entries", "notes", "edits", "pending"):
        if said.get(key, 0) != found[key] and (key != "notes" or said.get(key) not in older):
            raise Damaged(
                f"refused: the archive's manifest counts {said.get(key, 0):,} {key}, its files "
                f"hold {found[key]:,}; it was changed after memoryd wrote it"
            )


def _signature(home: Home) -> list[tuple[str, int, int, int]]:
    """What tells whether memoryd's files changed: each one's inode, size and mtime."""
    out = []
    for name, path in layout.memory_files(home):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        out.append((name, st.st_ino, st.st_size, st.st_mtime_ns))
    return out


def _hold(service, replace: bool):
    """On the writer: a snapshot of the memory there (None when there is none) and its
    signature; refused when there is memory and not replace."""
    home = service.store.home
    there = has_memory(service.store)
    if there is None:
        return None, None
    if not replace:
        raise _holds_memory(there)
    # A home lacking a file (memory.md removed by hand) is what a restore mends; the copy keeps
    # what there is, and the file as memoryd's start would make it, so that restore takes the
    # copy back. What is there but cannot be read still refuses it.
    return _copy(service.store), _signature(home)


def _copy(store) -> snapshot.Snapshot:
    """The snapshot of the home restore --replace backs up (snapshot.take_to_mend). A soul.md
    missing is held as the starter memoryd's start would write; if that cannot be read now, as
    the one memoryd ships (any is the owner's to change; none would make the copy one restore
    refuses)."""
    starter = _starter(store)
    if starter is None:
        try:
            starter = read_soul_starter(PACKAGED_SOUL)
        except MemorydError:
            starter = b""
    return snapshot.take_to_mend(store.home, starter)


def _holds_memory(there: str) -> AdminRefused:
    return AdminRefused(
        f"refused: the home holds memory ({there}), which a restore would replace; nothing was "
        "restored: restore --replace backs it up first, then replaces it"
    )


def _settle(service, replace: bool, seen) -> str | None:
    """On the writer, the recall log held still (a recall's line appended after this would be
    laid over unseen): refused when the home holds memory and not replace; backed up again when
    it was written to since its first backup. The path of that new backup, or None."""
    home = service.store.home
    there = has_memory(service.store)
    if there is None:
        return None
    if not replace:
        raise _holds_memory(there)
    if seen is None or _signature(home) != seen:  # written to since it was backed up
        return _backup(home, _copy(service.store))
    return None


def _backup(home: Home, held) -> str:
    """Write the backup of what the home holds; refused, saying nothing was laid, if it fails."""
    try:
        return str(backup.make(home, held, False, replaced=True).path)
    except MemorydError as e:
        reason = str(e).removeprefix("refused: ")
        raise AdminRefused(
            f"refused: the memory here could not be backed up first ({reason}); nothing was "
            "restored"
        ) from None


def _back_up_first(service, replace: bool):
    """The backup of the memory there, written before anything is laid (the archive is written
    off the writer); (its path, the signature of the files it holds), or (None, None)."""
    home = service.store.home
    held, seen = service._writer.submit(0, _hold, service, replace).result()
    if held is None:
        return None, None
    return _backup(home, held), seen


def _refuse_until_restart(service, reason: str) -> None:
    """The home is part old, part new: every read and write of memory is refused (service.py)
    until the next start carries out the rest of the plan (lay.recover)."""
    service.unfinished = (
        f"refused: a restore stopped part way ({reason}); restart memoryd to finish it"
    )
    log.error(
        "%s: a restore stopped part way (%s); memory is refused until memoryd restarts and "
        "finishes it",
        lay.plan_path(service.store.home),
        reason,
    )


def _lay(service, staging, order: Order):
    started = time.monotonic()
    store = service.store
    home: Home = store.home
    staged = Home(staging)
    if not order.replace and (there := has_memory(store)) is not None:
        raise _holds_memory(there)  # at once; judged again once the recall log is held
    # Session records the owner made memoryd forget stay forgotten: the logs are not restored,
    # so an older archive must not bring them back into the index. (Note keys belong to the
    # notes.md they were made in, which the archive replaces.) Texts the owner made memoryd
    # forget after the archive was made are left out of the files laid, and their digests are
    # laid with the rest, so that they stay forgotten.
    sessions_forgotten = sorted(k for k in forgotten.keys(home) if k.startswith("session:"))
    texts_forgotten = forgotten.texts(home)
    # The lines added to the staged journal go on after every id this home handed out or shows,
    # never after the archive's last (an older archive's would be given again).
    _keep_shown(store)
    store.journal.issued.carry_to(Journal(staged).issued)
    now = store.now()
    stamp = f"{now.astimezone(dt.UTC):%Y-%m-%dT%H:%MZ}"
    left = leftout.leave_out(staged, leftout.after_archive(home, staged), stamp, now)
    # The leave-out's own lines list each digest again as a forget of their own: the staged
    # forgotten.jsonl lists it so too, as every forget's lines are listed there.
    keys, texts = leftout.keep_forgotten(
        staged, sessions_forgotten + left.keys, stamp, texts_forgotten | frozenset(left.texts)
    )
    forgot_pending = forgotpending.in_months(store.journal.month_files())
    carried = leftout.carried_over(staged, now, stamp, keys, texts, forgot_pending)
    laid = backup.held_counts(staged)  # counted before the recall log is held still
    laid["edits"] += 1  # the restore's own line, added below
    for folder in (home.edits, home.recalls):
        # a whole home has both, even when the archive holds no month of them (a backup of a
        # new home) and the home lost them: without them the next backup is refused
        ensure_dir(folder)
    with recalllog.held(service):
        again = _settle(service, order.replace, order.seen)
        # The labels memoryd has seen of this home's sessions are laid with the archive's, never
        # fewer: the logs they are of stay (risen.py).
        risen.carry(home, staged)
        # laid with the files, so a kill leaves both or neither (lay.py)
        edit = lay.restored(staged, now, order.name, order.manifest, again or order.first)
        appended = [*left.edits, *([carried] if carried else []), edit]
        wanted = [a.removeprefix("memory/") for a, _ in layout.memory_files(staged)]
        current = [a.removeprefix("memory/") for a, _ in layout.memory_files(home)]
        remove = [rel for rel in current if rel not in wanted and rel != "soul.md"]
        unsafe = lay.unsafe(home, wanted + remove)
        if unsafe is not None:
            raise AdminRefused(
                f"refused: {unsafe} is not a regular file where memoryd keeps one; move it away, "
                "then restore again (nothing was restored)"
                + (f"; the memory here is backed up in {again}" if again else "")
            )
        # Ids this home showed for its own edits that the archive's journal gives to others.
        ids = idsrenamed.renamed(store.journal.month_files(), Journal(staged).month_files())
        with store.files_gate.changing():  # a block: all old or all new
            try:
                lay.commit(home, staging, wanted, remove, order.name, again or order.first)
            except lay.Unfinished as e:  # half old, half new: nothing may read or write it now
                _refuse_until_restart(service, str(e))
                _keep_laid(store, appended)  # laid by the start that finishes it
                return again, time.monotonic() - started, str(e), "", (edit, keys, laid)
        _keep_laid(store, appended)
    log.info("%s: restored %s", home.memory, counted(len(wanted), "file"))
    # The files are laid: from here on nothing may answer that the home is as it was.
    said = after_restore(service, archived(order.manifest))
    renamed = idsrenamed.said(ids)
    said = "; ".join(x for x in (left.said(), renamed, said) if x)
    return again, time.monotonic() - started, None, said, (edit, keys, laid)


def _keep_shown(store) -> None:
    """Keep as handed out (Issued.shown) the highest edit and pending id of each day the home's
    journal and pending.jsonl hold, before a restore lays other files over them: the owner may
    have been shown any of them (log, pending), yet those an earlier restore laid (another
    home's, or its own lines, given in its staged journal) are in no copy of the ids handed out
    here. Without this the restore's own lines, and the next write staged, would be given them
    again, and an accept or undo of an id the owner was shown would act on another edit. An
    OSError refuses the restore, the home as it was."""
    months = store.journal.month_files()
    edits: dict[str, int] = {}
    for path in months:
        with mapped(path) as data:
            for m in finditer(LINE_ID, data):
                _top(edits, m.group(1).decode(), int(m.group(2)))
    pending: dict[str, int] = {}
    named = all_ids(store.home.memory_file("pending.jsonl")) + sorted(scan.pending_ids(months))
    for value in named:
        if idform.PENDING_ID.match(value):
            _top(pending, *idform.order(value))
    store.journal.issued.shown("edit", edits)
    store.journal.issued.shown("pending", pending)


def _top(days: dict[str, int], day: str, number: int) -> None:
    # Not the last number a day can have (a hand edit): the journal refuses writes while it holds
    # that line, but kept here it would refuse them after the restore took the line away.
    if number < idform.NUMBER_MOST:
        days[day] = max(days.get(day, 0), number)


def _keep_laid(store, ids: list[str]) -> None:
    """Keep the ids of the restore's own lines (given in the staged journal, whose copy of the
    ids handed out is not laid) as handed out here, once they are laid: a later restore goes on
    after them even when the journal that holds them is gone by then."""
    for value in ids:
        store.journal.issued.note("edit", value)
