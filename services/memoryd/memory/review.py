"""Review mode (spec 5): writes to memory.md and user.md wait in pending.jsonl for the owner.

A pending line: {"id": "p-2026-09-24-0001", "time", "session", "call", "action", "file", "taint",
"untrusted", "args": <the memory call's arguments>}. Ids count from 0001 within the day, over the
ids in pending.jsonl and those the journal recorded as accepted or rejected, so an id is never
used twice, nor after the last one handed out (journal.Issued), so pending.jsonl deleted or replaced
under memoryd never makes an id the owner was shown name another change. Notes are never staged.

Whether an item still waits is decided by the journal: accept and reject journal the pending id,
then pending.jsonl is rewritten without it. A crash between the two leaves a line the journal
already resolved, which is not listed and cannot be accepted twice. A forget of a text a waiting
write carries resolves it the same way: its journal line names the write (journal/forgotpending.py)
before the write's line leaves pending.jsonl, and accept and reject of it name that forget.

A staged write lives only in pending.jsonl until it is accepted or rejected. So an id memoryd
handed out (Issued) that neither pending.jsonl holds nor the journal resolved is a write whose
line left the file (deleted, or replaced by an older copy): pending says so, accept and reject of
it say so, and memoryd's start logs it once, as log does for the journal's lost lines (lost).
But a memoryd older than forgotpending.py's list took such writes away by a forget whose line names
none: a missing write handed out before such a forget line is said as probably taken by it (naming
it), never as lost, as the backup that would bring its line back holds the text the owner forgot.
What is gone is worked out and said by pendinggone.py; a line's model is pendingline.py's.
"""

import datetime as dt
import errno
import json
import logging
import re
from collections.abc import Callable

from memoryd.errors import AdminRefused
from memoryd.home import Home, atomic_write
from memoryd.journal import forgotpending, idcopies
from memoryd.journal.byfile import JournalIndex
from memoryd.journal.idform import DAY_B, NUMBER_B, NUMBER_MOST, PENDING_ID, day_numbers
from memoryd.journal.journal import append_record, record_time, utc
from memoryd.journal.linefile import all_ids, cut_lines, damaged_lines, line_id, read_lines
from memoryd.journal.rollback import append_or_cut_back
from memoryd.memory import pendinggone
from memoryd.memory.pendingline import PendingLine
from memoryd.memory.pendingspans import Found
from memoryd.trust.caller import Caller
from proto.errors import InvalidArguments
from proto.tools import parse_memory

log = logging.getLogger(__name__)
PENDING_FILE = "pending.jsonl"


def waiting_sentence(file: str, pending_id: str) -> str:
    return (
        f"waiting for the owner: review is on, so this change to {file} is pending as "
        f"{pending_id}; it takes effect in a later session once the owner accepts it"
    )


class Review:
    def __init__(self, home: Home, index: JournalIndex):
        self.home = home
        self.index = index

    @property
    def path(self):
        return self.home.memory_file(PENDING_FILE)

    def _resolved(self) -> set[str]:
        # Kept by the journal's index as the journal grows, not searched for in it each time.
        return self.index.resolved_pending()

    def items(self) -> list[PendingLine]:
        """The edits still waiting, oldest first."""
        resolved = self._resolved()
        return [item for item in read_lines(self.path, PendingLine) if item.id not in resolved]

    def damaged(self) -> list[tuple[int, str | None]]:
        """The lines of pending.jsonl that do not parse (a hand edit, a bad disk), the journal
        has not resolved: (line number, the id it still names or None). pending says them, and
        a rewrite keeps them as they are."""
        resolved = self._resolved()
        out = []
        for number, raw in damaged_lines(self.path, PendingLine):
            named = _named(raw)
            if named not in resolved:
                out.append((number, named))
        return out

    def _held(self) -> set[str]:
        """Every pending id pending.jsonl names (its damaged lines' too) or the journal resolved."""
        named = {_named(raw) for _, raw in damaged_lines(self.path, PendingLine)}
        return set(all_ids(self.path)) | self._resolved() | {n for n in named if n is not None}

    def holding(self, holds: Callable[[dict], bool]) -> list[str]:
        """The ids of the staged writes not yet resolved whose line holds as holds judges it (a
        damaged line's too, when it is JSON and still names its id): those a forget drops from
        pending.jsonl, which its journal line names so they are resolved, not lost."""
        found = [item.id for item in self.items() if holds(item.dump())]
        resolved = self._resolved()
        for _, raw in damaged_lines(self.path, PendingLine):
            named = _named(raw)
            if named is None or named in resolved or named in found:
                continue
            try:
                value = json.loads(raw)
            except (ValueError, RecursionError):
                continue
            if isinstance(value, dict) and holds(value):
                found.append(named)
        return found

    def lost(self) -> Found | None:
        """The staged writes gone from pending.jsonl: (how many, the first id, the last), or None.
        Ids count on from 0001 within a day, so each number up to the last handed out that day
        was a staged write; those only the floor gives are apart (lost_on_floor), and so are
        those an older memoryd's forget probably took (taken)."""
        return self._gone().lost

    def lost_on_floor(self) -> Found | None:
        """The same of the numbers only the floor (index/ids-handed-out.json) gives as handed
        out: gone if it is right, never handed out if it is damaged."""
        return self._gone().floor

    def taken(self) -> list[tuple[forgotpending.Unnamed, Found]]:
        """The staged writes gone from pending.jsonl that were handed out before a forget line
        naming no staged write (an older memoryd's), by the first such forget after them."""
        return self._gone().taken

    def _gone_writes(self) -> pendinggone.GoneWrites:
        return pendinggone.GoneWrites(self.path, self.index.journal, self._held)

    def _gone(self) -> pendinggone.Gone:
        return self._gone_writes().gone()

    def lost_sentence(self) -> str | None:
        """What pending adds when staged writes left pending.jsonl (None: none did)."""
        return self._gone_writes().sentence()

    def say_lost(self) -> None:
        """At start: the staged writes gone from pending.jsonl, said once."""
        self._gone_writes().say()

    def next_id(self, when: dt.datetime) -> str:
        day = f"{utc(when):%Y-%m-%d}"
        ids = all_ids(self.path)  # a damaged line's id too: an id is never used twice
        ids += sorted(self._resolved())
        held = max(day_numbers(ids, day), default=0)
        issued = self.index.journal.issued.number("pending", day)
        source = self.index.journal.issued.source("pending", day)
        if issued > held:
            log.warning(
                "%s: neither it nor the journal holds p-%s-%04d, the last pending id memoryd "
                "handed out according to %s (its line left the file%s); ids go on after it",
                self.path,
                day,
                issued,
                idcopies.named_by(source),
                idcopies.damaged_too(source),
            )
        # An id past nine digits would read as no id (idform.NUMBER) and be handed out again.
        if held >= NUMBER_MOST:
            raise OSError(
                errno.EOVERFLOW,
                f"{self.path} or the journal holds p-{day}-{NUMBER_MOST}, the last pending id "
                "a day can have; no edit can be staged until tomorrow (a line edited by hand?)",
            )
        if issued >= NUMBER_MOST:
            # Said as the copy that gave it: neither pending.jsonl nor the journal holds it.
            raise OSError(
                errno.EOVERFLOW,
                f"according to {idcopies.named_by(source)}, memoryd handed out p-{day}-{issued}, "
                f"the last pending id a day can have (neither {self.path} nor the journal holds "
                f"{f'one past p-{day}-{held:04d}' if held else 'one of that day'}); no edit can "
                "be staged until tomorrow"
                f"{idcopies.refusal_hint(source)}",
            )
        return f"p-{day}-{max(held, issued) + 1:04d}"

    def stage(self, when: dt.datetime, caller: Caller, args, file: str) -> PendingLine:
        """Stage a session's edit of file (memory.md or user.md); the pending line."""
        item = PendingLine(
            id=self.next_id(when),
            time=record_time(when),
            **caller.head(),
            action=args.action,
            file=file,
            args=args.model_dump(mode="json", exclude_none=True),
        )
        append_or_cut_back(self.path, lambda: append_record(self.path, item.dump()))
        self.index.journal.issued.note("pending", item.id)
        return item

    def get(self, pending_id: str) -> PendingLine:
        """A waiting item by id; AdminRefused when there is none."""
        if not PENDING_ID.match(pending_id):
            raise AdminRefused(
                f"refused: {pending_id[:64]!r} is not a pending id (p-YYYY-MM-DD-NNNN)"
            )
        for item in self.items():
            if item.id == pending_id:
                return item
        for number, named in self.damaged():
            if named == pending_id:
                raise AdminRefused(
                    f"refused: edit {pending_id}'s line in {self.path} (line {number:,}) is "
                    "damaged: it does not parse, so it can be neither accepted nor rejected; "
                    "mend that line (memoryd's log says what is wrong with it) or delete it"
                )
        if pending_id in self._resolved():
            forget = forgotpending.edit_of(self.index.journal.month_files(), pending_id)
            if forget is not None:
                raise AdminRefused(
                    f"refused: {pending_id} was forgotten by the owner (edit {forget}): the "
                    "forget took the text it would write, and the staged write with it; nothing "
                    "waits under that id"
                )
        if self.index.journal.issued.handed_out("pending", pending_id) and (
            pending_id not in self._held()
        ):
            raise AdminRefused(self._gone_writes().left_sentence(pending_id))
        raise AdminRefused(f"refused: no edit {pending_id} is waiting for review")

    def discard(self, pending_id: str) -> None:
        """Rewrite pending.jsonl without pending_id and anything the journal resolved."""
        cut = cut_lines(self.path)
        if cut:
            # Rewritten from what is read of it, the rest of that line would be lost: the file is
            # left as it is, the journal having resolved the item (no longer listed).
            log.warning(
                "%s: %s not removed: line %d is longer than any line memoryd writes, and a "
                "rewrite would cut it; delete that line to have resolved items removed",
                self.path,
                pending_id,
                cut[0],
            )
            return
        keep = [item for item in self.items() if item.id != pending_id]
        data = "".join(json.dumps(item.dump(), ensure_ascii=False) + "\n" for item in keep)
        # A damaged line is the owner's to mend: kept as it was, never dropped by a rewrite.
        damaged = damaged_lines(self.path, PendingLine)
        kept = [raw for _, raw in damaged if _named(raw) != pending_id]
        try:
            atomic_write(self.path, data.encode("utf-8") + b"".join(raw + b"\n" for raw in kept))
        except OSError as e:
            # The journal has resolved the item already: it is no longer listed, and a later
            # discard rewrites the file without it.
            log.warning("%s: %s not removed now: %s", self.path, pending_id, e.strerror)


def args_of(item: PendingLine):
    """The memory call a pending item holds, parsed again; AdminRefused if it no longer parses."""
    try:
        return parse_memory(json.dumps(item.args))
    except InvalidArguments as e:
        raise AdminRefused(f"refused: pending {item.id} is damaged ({e})") from None


_ID_IN_LINE = re.compile(rb'"id":\s*"(p-' + DAY_B + b"-" + NUMBER_B + rb')"')


def _named(raw: bytes) -> str | None:
    """The pending id a damaged line still names, when it can be read off it."""
    named = line_id(raw)
    if named is not None and PENDING_ID.match(named):
        return named
    m = _ID_IN_LINE.search(raw)
    return m.group(1).decode() if m else None
