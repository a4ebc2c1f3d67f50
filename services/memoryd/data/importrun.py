"""bxctl memory import, carried out: the file is read and every line checked off the writer
(importing.py), then the items are applied in batches, each a job of its own on the writer thread
that gives it back after BATCH_SECONDS, so that other writes wait for one batch, never for the
whole import. Each item applied is written and journalled before the next is taken: an import
stopped part way (a full disk, or memoryd stopping, which ends it between two batches so that the
stop is prompt) is refused saying how many items were imported, by which edits, and
that importing the file again brings the rest (what is there is skipped); so does one whose
bxctl has gone (importstop.py). Each item is routed
by the strictest of its provenance and what this home recorded of it: the journal line of the
edit it names, the notes and journal writes of its text, the journal's label of its session
(importclaim.py): a claim in the file never makes memoryd's own record laxer. A note this home
holds under a laxer label that its journal does not record as its own session's write is given
the stricter label in place (importsame.py), and notes.md is indexed again at the batch's end.

What an import holds is a small multiple of its file, whatever the file's count of items: the
file's bytes and a few bytes an item (importing.Items), the notes counted by digest, and of the
report's lines (one an item) only the first that the answer can send.
"""

import logging
import time
from dataclasses import dataclass, field

from memoryd.data import importing, importsame, layout, purge
from memoryd.data.importclaim import Claims
from memoryd.data.importing import FILE_ARG, Items, State
from memoryd.data.importitems import EntryItem, Item
from memoryd.data.importstop import Stop, stopped
from memoryd.errors import AdminRefused, EditRefused, MemorydError, WriteFailed, WriteNotTakenBack
from memoryd.journal.journal import Edit
from memoryd.memory import edits, notes
from memoryd.trust.caller import OWNER
from memoryd.writer import WRITE
from proto import peer
from proto.plural import counted
from proto.tools import AddArgs
from proto.trim import trim

log = logging.getLogger(__name__)

BATCH_SECONDS = 0.25  # how long one batch may hold the writer
LINES_KEPT = 2_000  # of the report's lines, unless the caller asks for fewer


@dataclass
class Progress:
    at: int = 0  # the next item to take
    applied: int = 0
    skipped: int = 0
    forgotten: int = 0  # among skipped: texts the owner made memoryd forget
    first_edit: str | None = None
    last_edit: str | None = None
    lines: list[str] = field(default_factory=list)  # the first `keep` of them
    keep: int = LINES_KEPT
    stopped: str | None = None
    untaken: bool = False  # the item it stopped at may stand in its file (WriteNotTakenBack)

    def said(self, number: int, item: Item, said: str) -> None:
        if len(self.lines) < self.keep:
            self.lines.append(importing.line(number, item, said))

    def made(self, edit: str) -> None:
        self.first_edit = self.first_edit or edit
        self.last_edit = edit


def run(
    service, name: str, dry_run: bool, keep: int = LINES_KEPT, gone: peer.Probe | None = None
) -> dict:
    """Import backups/name (on a reader thread: the writer is taken one batch at a time). The
    answer's lines are the first `keep` of the report: applied + skipped is the count of all.
    gone (by default the probe of the connection being answered, peer.py) says when the caller
    has closed its connection: the import then stops between two items or batches."""
    store = service.store
    done = Progress(keep=keep)
    gone = gone if gone is not None else peer.current()
    try:
        result = _run(service, name, dry_run, done, Stop(service.stopping, gone))
    except (MemorydError, OSError) as e:
        # One line at its end, as every owner command that writes memory leaves: an import runs
        # on after a bxctl that stopped waiting, and this line is then all that tells how far.
        said = " ".join(str(e).split("\n"))
        said = said if said.startswith("refused: ") else f"stopped: {said}"
        log.info("%s: import %s", _where(store, name), said)
        raise
    log.info("%s: %s", _where(store, name), result["message"] + _edits(done))
    return result


def _where(store, name: str) -> str:
    """The file imported, for the log: a name that is none of backups/ is quoted, cut."""
    if layout.NAME.fullmatch(name):
        return str(layout.backups(store.home) / name)
    return f"backups/{name[:64]!r}"


def _edits(done: Progress) -> str:
    if done.first_edit is None:
        return ""
    if done.first_edit == done.last_edit:
        return f" (edit {done.first_edit})"
    return f" (edits {done.first_edit} to {done.last_edit})"


def _run(service, name: str, dry_run: bool, done: Progress, stop: Stop) -> dict:
    store = service.store
    parsed = importing.parse(importing.read_export(store.home, name))
    state = service._writer.submit(WRITE, _begin, store).result()
    # This home's records of the file's texts, read here, off the writer; a batch reads only
    # what they gained since.
    named = set[str]()

    def texts():  # one pass over the file: the texts (kept as digests), the edits they name
        for _, item in parsed:
            if item.provenance.edit is not None:
                named.add(item.provenance.edit)
            yield item.text

    claims = Claims(store.home, texts(), named)
    if dry_run:
        _dry(parsed, state, claims, store.max_class, done, stop)
    while not dry_run and done.at < len(parsed) and done.stopped is None:
        if (why := stop.why()) is not None:  # between two batches: each item before journalled
            done.stopped = why
            break
        try:
            service._writer.submit(WRITE, _batch, service, parsed, state, claims, done).result()
        except MemorydError as e:  # a file the owner damaged between two batches
            done.stopped = str(e).removeprefix("refused: ")
    if done.stopped is not None:
        raise AdminRefused(stopped(done, len(parsed)))
    verb = "would import" if dry_run else "imported"
    message = f"{verb} {done.applied:,} of {counted(len(parsed), 'item')}; {done.skipped:,} not"
    if done.forgotten:
        message += (
            f" ({counted(done.forgotten, 'item')} the owner made memoryd forget, left out: "
            "nothing forgotten comes back through an import)"
        )
    if dry_run:
        message += " (dry run: nothing was written)"
    return {
        "applied": done.applied,
        "skipped": done.skipped,
        "forgotten": done.forgotten,
        "lines": done.lines,
        "message": message,
    }


def _begin(store) -> State:
    with store.lock:
        store.detect_hand_edits()
    return State(store.home)


def _dry(
    parsed: Items,
    state: State,
    claims: Claims,
    max_class: str,
    done: Progress,
    stop: Stop,
) -> None:
    for at, (number, item) in enumerate(parsed):
        # a dry run of a large file takes seconds: neither a stop nor a caller gone need wait
        if (why := stop.why()) is not None:
            raise AdminRefused(
                f"refused: the dry run stopped at item {at + 1:,} of {len(parsed):,} ({why}); "
                "nothing was written"
            )
        item, what, said, why = _decide(item, state, claims, max_class, done)
        if what == "skip":
            done.skipped += 1
        else:
            done.applied += 1
        done.said(number, item, said + (f"; {why}" if why else ""))


def _batch(service, parsed: Items, state: State, claims: Claims, done: Progress) -> None:
    """Apply items from done.at on, at least one, until BATCH_SECONDS have passed (on the
    writer)."""
    store = service.store
    started = time.monotonic()
    before = service.index.notes_file()  # what follows is memoryd's own change of notes.md
    with store.lock:
        store.detect_hand_edits()
    state.refresh(store.home)
    claims.refresh()  # the journal and notes.md as they are now
    first = done.at
    relabelled = False
    try:
        while done.at < len(parsed) and (
            done.at == first or time.monotonic() - started < BATCH_SECONDS
        ):
            number, item = parsed[done.at]
            item, what, said, why = _decide(item, state, claims, store.max_class, done)
            if what != "skip":
                edit: str | None
                try:
                    if what == "relabel" and state.relabel is not None:
                        edit = importsame.relabel(store, state.relabel, item.provenance.dump())
                        relabelled = True
                        state.rewritten(store.home)
                    else:
                        edit = _apply(store, item, what)
                except (WriteFailed, OSError) as e:
                    reason = e.strerror if isinstance(e, OSError) else str(e)
                    done.stopped = f"line {number}: {str(reason).removeprefix('refused: ')}"
                    done.untaken = isinstance(e, WriteNotTakenBack)
                    return
                except EditRefused as e:  # the file changed under it since it was planned
                    what, said = "skip", f"not imported: {str(e).removeprefix('refused: ')}"
                    edit = None
                if edit is None and what != "skip":
                    what, said = "skip", "already there"
                if edit is not None:
                    said += f" as edit {edit}"
                    done.made(edit)
                    if what.startswith("note:"):
                        state.appended(store.home)
            if what == "skip":
                done.skipped += 1
            else:
                done.applied += 1
            done.said(number, item, said + (f"; {why}" if why else ""))
            done.at += 1
    finally:
        if relabelled:
            _reindex_notes(service)
        service._index_notes(before)


def _reindex_notes(service) -> None:
    """notes.md was rewritten by a relabel: its rows read again from its start (a header before
    the index's offset changed, which a catch-up reading on would not see)."""
    try:
        purge.reindex_notes(service.index)
    except Exception as e:  # noqa: BLE001 - the relabel stands; the next catch-up reads it
        log.warning("memory/notes.md: not indexed again after an import's relabel: %s", e)


def _decide(
    item: Item, state: State, claims: Claims, max_class: str, done: Progress
) -> tuple[Item, str, str, str | None]:
    """importing.decide of the item as this home's journal labels it at the least (importclaim:
    that item is the one applied, and why, when it is stricter than its provenance claimed),
    with a forgotten text counted and skipped."""
    item, why = claims.check(item)
    what, said = importing.decide(item, state, max_class)
    if what == importing.FORGOTTEN:
        done.forgotten += 1
        return item, "skip", said, None
    return item, what, said, why


def _apply(store, item: Item, what: str) -> str | None:
    """Write one item and journal it; its edit id (None when it changed nothing)."""
    prov = item.provenance.dump()
    if what == "add" and isinstance(item, EntryItem):
        file = item.file

        def plan(current: list[str]) -> edits.Plan:
            p = edits.plan(AddArgs(action="add", file=FILE_ARG[file], text=item.text), current)
            return edits.Plan("import", file, p.before, p.after)

        record = store.owner_edit(file, plan, OWNER, "import", {"imported": prov})
        return record.id if record is not None else None
    kind = what.removeprefix("note:")
    text = trim(item.text)
    now = store.now()
    when = importing._when(item.provenance.time, now)
    session = item.provenance.session or "owner"
    klass = item.provenance.klass
    if kind == "noted":
        block = notes.noted(text, when, session, klass, item.provenance.untrusted)
    elif item.source is not None:  # a moved or dropped note names it (importing._problem)
        block = notes.moved_or_dropped(kind, text, when, item.source, session, klass)
    else:
        raise EditRefused(f"refused: a {kind} note that names no file it left")
    line = {
        "session": "owner",
        "call": None,
        "taint": None,
        "untrusted": False,
        "action": "import",
        "file": None,
        "to": "notes.md",
        "before": [],
        "after": [text],
        "notes": [{"kind": kind, "text": text}],
        "imported": prov,
    }
    with store.lock:
        try:
            record = store.append_note(block, now, Edit.model_validate(line))
        except OSError as e:
            raise store.not_applied("notes.md", "import", None, e) from None
    return record.id
