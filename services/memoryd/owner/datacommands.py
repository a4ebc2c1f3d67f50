"""The owner's data commands as owner/dispatch.py runs them: backup, restore, export, import,
forget. Each answers one JSON document (bxctl prints it, or its message).

backup, restore and forget are registered as reads: they run on a reader thread and take the
writer only for their own step (a snapshot; laying the files; the forget once its index rows are
found), so writes wait for that step, not for the archive or a scan of the index. import is a
read too: it takes the writer a batch of items at a time. forget, import and restore each run
alone, backups and exports beside each other, and at most datalock.SHARE of these commands (their
previews and dry runs too) at once, so that memory_block and recall always find a reader
(datalock.py).

While a forget that stopped part way stands, an export leaves out what it takes, as recall does,
since an export is what the owner carries to another home, where no re-run of the forget reaches;
a backup goes on (it is the owner's protection of the home) and says that it may hold that text.
Both name the command that finishes the forget.
"""

import logging
import sqlite3
from collections.abc import Callable
from typing import Literal

from memoryd.data import (
    backup,
    backupkeep,
    exchange,
    exportfiles,
    exportitems,
    forget,
    importrun,
    layout,
    restore,
    snapshot,
    unfinished,
)
from memoryd.errors import AdminRefused
from memoryd.memory import block
from memoryd.owner import paging
from memoryd.owner.datalock import TURNS, refuse_while_forget_stopped, stopped_forget
from memoryd.writer import WRITE
from proto.plural import counted

log = logging.getLogger(__name__)

LINES_SHOWN = 2_000  # of an import's report, so that the answer fits one reply
LINES_BYTES = 512 << 10  # and at most this many bytes of them, whatever the texts they quote
LEFT_OUT_SHOWN = 10  # session logs a backup left out, named in its answer; the rest counted


def _count_text(counts: dict, records: bool) -> str:
    """counts as the answer says them; records only of an archive that holds session logs (one
    without them holds no record: they stay in sessions/)."""
    nouns = (("entries", "entry"), ("notes", "note"), ("edits", "edit"))
    said = [counted(counts.get(key, 0), one, key) for key, one in nouns]
    said.append(f"{counts.get('pending', 0):,} pending")
    if records:
        said.append(counted(counts.get("records", 0), "record"))
    return ", ".join(said)


def run_backup(service, arg) -> str:
    home = service.store.home
    if arg.prune_only:
        return _prune_backups(home, arg.keep, arg.made)
    # One point in time, read from the latest-written back: the index's records (derived from
    # the logs), then the session logs (loopd logs a memory write's result once memoryd applied
    # it), then the memory files on the writer. Each is no later than the next, so the archive
    # counts no record its logs lack and its logs show no write its memory and journal lack.
    # Records are counted of the logs it holds alone: without them it holds none.
    indexed = backup.records_by_session(home.index_db) if arg.with_sessions else {}
    left_out: dict[str, str] = {}  # session logs recall does not read, by folder: not archived
    noted = snapshot.note_sessions(home, left_out) if arg.with_sessions else []
    records = sum(indexed.get(s, 0) for s in backup.sessions_of(noted))
    stopped = _backup_stopped(home)  # a forget runs alone: it neither starts nor ends meanwhile
    snap = service._writer.submit(WRITE, snapshot.take, home).result()
    snap.files.extend(noted)
    made = backup.make(home, snap, arg.with_sessions, records=records)
    pruned = backupkeep.prune(home, arg.keep, made.path) if arg.keep else backupkeep.Pruned()
    counts = made.manifest["counts"]
    message = (
        f"backup written to {made.path} ({made.size:,} bytes, "
        f"{counted(len(made.manifest['files']), 'file')}): "
        f"{_count_text(counts, arg.with_sessions)}{made.uncounted_said()}; "
        f"writes waited {made.waited * 1000:.1f} ms for it"
    )
    if left_out:
        message += f"; {_logs_left_out(left_out)}"
    if pruned.removed:
        message += f"; removed {counted(len(pruned.removed), 'older backup')} (keeping {arg.keep})"
    if (ahead := pruned.said(arg.keep)) is not None:
        message += f"; {ahead}"
    if stopped is not None:
        log.warning("%s: %s", made.path, stopped)
        message += f"; but {stopped}"
    return paging.dumps(
        {
            "path": str(made.path),
            "size": made.size,
            "files": len(made.manifest["files"]),
            "counts": counts,
            "uncounted": made.uncounted,  # files whose entries counts leaves out, and why
            # session logs not in the archive, by folder, and why (the first few), and how many
            "left_out": dict(sorted(left_out.items())[:LEFT_OUT_SHOWN]),
            "left_out_count": len(left_out),
            "writer_wait_ms": round(made.waited * 1000, 3),
            "removed": pruned.removed,
            "ahead": pruned.ahead,
            "forget_stopped": stopped,
            "message": message,
        }
    )


def _logs_left_out(left_out: dict[str, str]) -> str:
    """The session logs a backup --with-sessions did not archive, as stats calls them left
    aside: a few named with why, the rest counted."""
    shown = sorted(left_out.items())[:LEFT_OUT_SHOWN]
    named = [f"sessions/{session} ({why})" for session, why in shown]
    more = len(left_out) - len(named)
    rest = f" and {more:,} more" if more else ""
    return (
        f"{counted(len(left_out), 'session log')} left out, as recall does not read "
        f"{'it' if len(left_out) == 1 else 'them'}: {', '.join(named)}{rest}"
    )


def _backup_stopped(home) -> str | None:
    """What a backup says while a forget that stopped part way stands: the archive holds the
    files as they are, which may still hold what it takes, and the re-run of the forget names
    the archives in backups/ that may hold it. The backup is made all the same."""
    try:
        stopped = stopped_forget(home)
    except AdminRefused as e:  # its record cannot be read: what it takes is not known
        return f"{str(e).removeprefix('refused: ')}; this archive may still hold its text"
    if stopped is None:
        return None
    return (
        f"a forget of {stopped.what} stopped part way: this archive may still hold its text;"
        f" run {_again(stopped)} again to finish it (it names the archives in"
        f" {layout.backups(home)} that may hold the text)"
    )


def _again(stopped: unfinished.Unfinished) -> str:
    """The command that finishes stopped, said without its text (a log line or the daily
    backup's output must not hold it): the id it was given, else stats names it."""
    if stopped.ref == stopped.id:
        return f"bxctl memory forget {stopped.ref}"
    return "the same bxctl memory forget (bxctl memory stats names it)"


def _prune_backups(home, keep: int, made: str) -> str:
    """Only the prune: bxctl asks for it once it has copied made, the archive just written,
    where the owner asked, so that a copy that failed removed no older archive."""
    pruned = backupkeep.prune(home, keep, layout.backups(home) / made)
    message = f"removed {counted(len(pruned.removed), 'older backup')} (keeping {keep})"
    if (ahead := pruned.said(keep)) is not None:
        message += f"; {ahead}"
    return paging.dumps({"removed": pruned.removed, "ahead": pruned.ahead, "message": message})


def _no_forget_stopped(service, command: str) -> None:
    """Refused while a forget that stopped part way stands (data/unfinished.py): the text it
    took is gone from the files but may not be listed as forgotten yet, so a restore or an
    import could bring it back unseen."""
    # an import's dry run may run beside a forget
    refuse_while_forget_stopped(service.store.home, f"{command}ed")


def run_restore(service, arg) -> str:
    _no_forget_stopped(service, "restor")
    laid = restore.run(service, arg.name, arg.replace)
    manifest = laid.manifest
    sessions = sum(1 for f in manifest["files"] if f["path"].startswith("sessions/"))
    # What was laid, not the manifest's counts: the texts forgotten since the archive was made
    # are left out, and no session record is laid here (bxctl lays the logs after, and says so).
    laid_counts = laid.counts or {}
    message = (
        f"restored {arg.name} (made {manifest.get('created')} by memoryd "
        f"{manifest.get('memoryd')}): {_count_text(laid_counts, False)}; {laid.index}"
    )
    if laid.before:
        message += f"; what the home held before is backed up in {laid.before}"
    if laid.edit:
        message += f"; the journal says so as edit {laid.edit} (bxctl memory show {laid.edit})"
    if sessions:
        message += f"; the archive holds {counted(sessions, 'session log')}"
    # An archive holds the files as they were, a hand edit past a limit included: restored
    # whole, and said, since until it is mended no session starts.
    if (refused := block.refusal(service.store.home)) is not None:
        message += (
            f"; but no session can start until the restored memory is mended: {refused} "
            "(bxctl memory edit memory|user, or soul.md by hand)"
        )
    return paging.dumps(
        {
            "restored": arg.name,
            "counts": manifest.get("counts", {}),  # the archive's: bxctl checks it is the same
            "laid": laid_counts,
            "before": laid.before,
            "edit": laid.edit,
            "session_logs": sessions,
            "forgotten_sessions": _forgotten_sessions(laid.since, manifest),
            "writer_wait_ms": round(laid.waited * 1000, 3),
            "message": message,
        }
    )


# The most session ids a restore's answer lists (each at most 128 characters: well inside a frame).
FORGOTTEN_SESSIONS_SHOWN = 4_000


def _forgotten_sessions(since: tuple[str, ...], manifest: dict) -> list[str] | None:
    """The sessions of the archive's logs that hold a record the owner made memoryd forget after
    the archive was made (since: the keys the restore carried over from the home): bxctl, which
    lays the logs the home lacks, leaves those out, as the restore leaves out every other text
    forgotten since (the owner may have removed the log to be rid of it). A record forgotten
    before the backup is the archive's own: its log is laid, the record kept out of the index.
    None: more than can be listed, and bxctl lays no log."""
    archived = {
        f["path"].split("/")[1] for f in manifest["files"] if f["path"].startswith("sessions/")
    }
    if not archived:
        return []
    held = {
        key.removeprefix("session:").rpartition(":")[0]
        for key in since
        if key.startswith("session:")
    }
    found = sorted(archived & held)
    return found if len(found) <= FORGOTTEN_SESSIONS_SHOWN else None


def run_forget(service, arg) -> str:
    """A read: the index rows to delete are found on this reader thread, then the writer is
    taken for the forget itself."""
    try:
        if arg.dry_run:
            return paging.dumps(forget.preview(service, arg.id, stopped_forget))
        found = forget.prepare(service, arg.id)
    except OSError as e:
        raise AdminRefused(
            f"refused: forget could not start ({_where(e)}); nothing was forgotten"
        ) from None
    try:
        future = service._writer.submit(
            WRITE, service._admin_write, forget.run, service, arg.id, found, arg.check, True
        )
        done = future.result()

        def on_writer(fn, *args):
            return service._writer.submit(WRITE, fn, *args).result()

        return paging.dumps(forget.settle(service, done, on_writer, done.pop("texts")))
    except (OSError, sqlite3.Error) as e:
        raise forget.stopped_part_way(_where(e)) from None
    finally:
        found.drop()  # what the writer did not use


def _where(e: Exception) -> str:
    """An OSError (or the index's error) in a few words: what went wrong, and on which file
    when it says."""
    return forget.error_text(e) if isinstance(e, OSError) else f"the index: {e}"


def run_export(service, arg) -> str:
    store = service.store
    if arg.prune_only:
        return _prune_exports(store.home, arg.made, store.now())
    stopped = _export_stopped(store.home)
    leaving = exportitems.Leaving.of(stopped.texts if stopped is not None else ())
    try:
        path, n_entries, n_notes = exchange.export(
            store.home,
            store.journal,
            arg.format,
            store.now(),
            service._writer,
            arg.remove_older,
            leaving,
        )
    except OSError as e:  # reading what it exports
        raise AdminRefused(
            f"refused: the export failed ({_where(e)}); nothing was written"
        ) from None
    said = f"{counted(n_entries, 'entry', 'entries')} and {counted(n_notes, 'note')}"
    message = f"exported {said} to {path}"
    left = None if stopped is None else _left_out(stopped, leaving)
    if left is not None:
        log.warning("%s: %s", path, left)
        message += f"; {left}"
    reply = {"path": path, "entries": n_entries, "notes": n_notes, "forget_stopped": left}
    return paging.dumps({**reply, "message": message})


def _export_stopped(home) -> unfinished.Unfinished | None:
    """The forget that stopped part way, whose texts the export leaves out; refused when its
    record cannot be read, since what it takes is then not known (recall then keeps out every
    key such a forget could take, which an export cannot do by text)."""
    try:
        return stopped_forget(home)
    except AdminRefused as e:
        raise AdminRefused(
            f"refused: nothing was exported: {str(e).removeprefix('refused: ')}"
        ) from None


def _left_out(stopped: unfinished.Unfinished, leaving: exportitems.Leaving) -> str:
    """What the export's answer and log say of the stopped forget: what of it was left out
    (the files may no longer hold it, the forget having rewritten them), and how to finish it."""
    counts = ((leaving.entries, "entry", "entries"), (len(leaving.notes), "note", "notes"))
    said = " and ".join(counted(n, one, many) for n, one, many in counts if n)
    if said:
        took = f"left out of this export, as search leaves it out: {said} holding its text"
    else:
        took = (
            "memory.md, user.md and notes.md no longer hold its text, so neither does this export"
        )
    again = _again(stopped)
    return f"a forget of {stopped.what} stopped part way: {took}; run {again} again to finish it"


def _prune_exports(home, made: str, now) -> str:
    """Only the removal of the exports before made, which bxctl asks for once it has copied
    made where the owner asked."""
    before = {p.name for p in exportfiles.exports(home)}
    exportfiles.remove_older_exports(home, made, now)
    removed = sorted(before - {p.name for p in exportfiles.exports(home)})
    message = f"removed {counted(len(removed), 'older export')}"
    return paging.dumps({"removed": removed, "message": message})


def run_import(service, arg) -> str:
    """A read: the file is checked on this reader thread, then applied a batch at a time on the
    writer (importrun.py). The report is cut to what fits one reply, so that an import that was
    applied is never answered as refused for the size of its answer."""
    _no_forget_stopped(service, "import")
    result = importrun.run(service, arg.name, arg.dry_run, LINES_SHOWN)
    total = result["applied"] + result["skipped"]  # a line an item; the first LINES_SHOWN kept
    shown, size = [], 0
    for line in result["lines"]:
        size += len(paging.dumps(line).encode()) + 1
        if size > LINES_BYTES:
            break
        shown.append(line)
    result["lines"] = shown
    if total > len(shown):
        result["message"] += f" ({total - len(shown):,} more lines not shown)"
    return paging.dumps(result)


def _in_turn(command: str, run: Callable[..., str]) -> Callable[..., str]:
    """run in command's turn (datalock.py); a preview or a dry run, which changes nothing, may
    run beside any other, but counts among those that hold a reader."""

    def in_turn(service, arg) -> str:
        with TURNS.turn(command, changes=not getattr(arg, "dry_run", False)):
            return run(service, arg)

    return in_turn


TABLE: dict[str, tuple[Literal["read", "write"], Callable[..., str]]] = {
    name: ("read", _in_turn(name, run))
    for name, run in (
        ("backup", run_backup),
        ("restore", run_restore),
        ("forget", run_forget),
        ("export", run_export),
        ("import", run_import),
    )
}
