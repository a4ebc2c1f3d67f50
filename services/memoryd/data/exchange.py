"""bxctl memory export: every entry of memory.md and user.md and every note, with provenance.

Provenance (docs/export-format.md, docs/export-schema-v1.json): the file it is in, and the
session, edit, time, class and untrusted flag of the write that put it there, worked out from one
pass over the journal: for an entry, the last edit that added it to its file; for a note, the edit
that appended it (its header gives the session, class and untrusted). An entry or note that came
in by import carries the provenance it was exported with (the journal line's "imported"), but
for its edit, which is this home's import edit (the one `bxctl memory show` shows here), so an
export, an import into an empty home and an export again give the same items, each edit id
naming the write in the home that exported it.

The export is one consistent picture, as a backup is: the writer is taken only to hold the files
it reads (memory.md, user.md, notes.md and the journal, an open and an fstat each: snapshot.py),
between two writes; the items are built from those, off the writer (exportitems.py), and the
export written as they are, a part at a time (notes.md has no limit: neither it nor the export
is ever held whole). A memory call or a restore landing meanwhile is not in the export, and
never half in it (an entry without its journal line, the journal of one home with the files of
another).

The export is written atomically (0600) into {home}/backups/ under a name never reused, and the
exports made before it are removed but for the youngest (exportfiles.py, which also takes a
forgotten text out of every export there). markdown is for reading (exportmd.py, which sets
each text apart from the document's own lines), jsonl for import. A failure is one line naming
the file, and leaves no export (one linked in whose folder can be neither synced nor rid of it is
named as left). Once linked in and synced, the export is made, whatever else fails after.

A provenance time is one import takes back (parse_time, which import checks with): a journal
line's time that is none (edited by hand to 2026-02-30, say) is left out (null; a note's header
time stands in), logged naming the edit, so that one line cannot make the whole export one that
import refuses.

While a forget that stopped part way stands, the caller passes the texts it takes (leaving), and
the export leaves them out, as recall does (exportitems.Leaving): a re-run of the forget scrubs
the exports in backups/, never a copy carried to another home.
"""

import datetime as dt
import json
import logging
import time
from collections.abc import Iterable, Iterator

from memoryd.data import archive, exportfiles, exportitems, exportmd, layout, snapshot
from memoryd.errors import AdminRefused
from memoryd.home import Home, ensure_dir
from memoryd.journal.journal import IDENTITY_FILES, Journal
from memoryd.writer import WRITE, Writer
from proto.plural import counted

FORMAT = "boxmaker-memory-export"
VERSION = 1

log = logging.getLogger(__name__)

# A provenance time as import takes it back (importing.py checks with it), and the export's
# items, looked up here by export (exportitems.py builds both).
parse_time = exportitems.parse_time
items = exportitems.items


def hold(home: Home, journal: Journal) -> snapshot.Snapshot:
    """On the writer: the files an export reads, held as they are now."""
    started = time.monotonic()
    listed = [(f"memory/{name}", home.memory_file(name)) for name in (*IDENTITY_FILES, "notes.md")]
    listed += [(f"memory/edits/{path.name}", path) for path in journal.month_files()]
    snap = snapshot.of_files(listed)
    snap.waited = time.monotonic() - started
    return snap


def header(now: dt.datetime) -> dict:
    return {
        "format": FORMAT,
        "version": VERSION,
        "memoryd": archive.memoryd_version(),
        "exported": f"{now:%Y-%m-%dT%H:%M:%SZ}",
    }


def jsonl(head: dict, found: Iterable[dict]) -> Iterator[bytes]:
    """The jsonl export a line at a time: the header, then an item a line."""
    yield (json.dumps(head, ensure_ascii=True) + "\n").encode()
    for item in found:
        yield (json.dumps(item, ensure_ascii=True) + "\n").encode()


class _Unread(Exception):
    """An OSError reading the files held, met while the export is being written: told apart
    from one writing it, which names the export's folder."""

    def __init__(self, error: OSError):
        super().__init__(str(error))
        self.error = error


def _reading(parts: Iterator[bytes]) -> Iterator[bytes]:
    try:
        yield from parts
    except OSError as e:
        raise _Unread(e) from e


def export(
    home: Home,
    journal: Journal,
    fmt: str,
    now: dt.datetime,
    writer: Writer | None = None,
    remove_older: bool = True,
    leaving: exportitems.Leaving | None = None,
) -> tuple[str, int, int]:
    """Write the export into backups/; (path, entries, notes). The files are held on writer
    (memoryd's; None: on this thread, for a home no memoryd writes); what leaving takes is left
    out, and counted in it. AdminRefused when it cannot be written, naming the file and leaving
    none; an OSError reading the files held."""
    if writer is None:
        snap = hold(home, journal)
    else:
        snap = writer.submit(WRITE, hold, home, journal).result()
    tally = {"entry": 0, "note": 0}

    def counting(found: Iterator[dict]) -> Iterator[dict]:
        for item in found:
            tally[item["kind"]] += 1
            yield item

    folder = layout.backups(home)
    suffix = "jsonl" if fmt == "jsonl" else "md"
    try:
        log.debug("export: the writer held the files for %.3f ms", snap.waited * 1000)
        found = counting(items(snap, leaving))  # a file refused here leaves nothing written
        head = header(now)
        parts = jsonl(head, found) if fmt == "jsonl" else exportmd.parts(head, found)
        try:
            ensure_dir(folder)
            path = exportfiles.new_file(folder, now, suffix, _reading(parts))
        except exportfiles.Unsynced as e:  # linked in, then neither synced nor removable
            raise AdminRefused(
                f"refused: the export failed syncing {folder} ({e.strerror or e}); "
                f"{e.filename} is left, not synced"
            ) from None
        except OSError as e:
            where = e.filename or folder
            log.error("%s: export failed: %s", where, e.strerror or e)
            raise AdminRefused(
                f"refused: the export failed writing {where} ({e.strerror or e}); "
                f"no export was left in {folder}"
            ) from None
    except _Unread as e:  # the files held, read as the export was written: none was left
        raise e.error from None
    finally:
        snap.close()
    if remove_older:
        exportfiles.remove_older_exports(home, path.name, now)
    said = (counted(tally["entry"], "entry", "entries"), counted(tally["note"], "note"))
    log.info("%s: export written (%s, %s)", path, *said)
    return str(path), tally["entry"], tally["note"]
