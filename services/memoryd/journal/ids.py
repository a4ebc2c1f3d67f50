"""The edit and pending ids handed out in this home (Issued, memory/.ids.json, with a copy in
index/), so that none is handed out twice once the journal or pending.jsonl has lost the line that
held it (journal.py says why). An id's form is idform.py's; what a copy holds, idsvalue.py's."""

import json
import logging
import os
import threading
from pathlib import Path

from memoryd.home import Home, atomic_write
from memoryd.journal import idcopies, idsvalue
from memoryd.journal.idform import NUMBER_MOST, order
from proto.files import NotRegular

log = logging.getLogger(__name__)

ISSUED_NAME = ".ids.json"
# The copy kept outside memory/: memory/ removed whole (a mistaken rm -rf, a cleaner) takes
# .ids.json with the journal, and a start that counted from nothing would give the ids the
# backups' journals already gave to other edits.
FLOOR_NAME = "ids-handed-out.json"


class Issued:
    """The ids handed out in this home, per kind (edit, pending) and day: the last number of each
    of the latest ISSUED_DAYS days (memory/.ids.json: {"edit": {"2026-12-01": 4, ...}, ...}), so
    that no id is handed out twice once the journal or pending.jsonl has lost the line that held
    it. Per day, not one last id: a day the clock once ran ahead to must not hide today's ids.

    Written after each append to a temporary file renamed over it, so a kill leaves it whole (old
    or new), and not fsync'd: the line it names was fsync'd first, so a power cut that loses this
    write loses an id the journal still holds (a temporary file left is removed at start). A
    missing, damaged or unreadable file is read as naming nothing (the journal decides alone, as
    before it existed); what this process handed out is kept in memory as well, so a file that
    cannot be written does not make an id repeat while memoryd runs.

    The same is written to index/ids-handed-out.json (the floor), and both are read, each day's
    highest number kept: the floor outlives memory/ removed whole, which takes .ids.json and the
    journal together. It is written only where index/ is a folder (a restore's staged home has
    none) and its failure is said once a process: .ids.json is the record, the floor its spare. So a
    floor number memoryd cannot have handed out is damage, said once and passed over, never a
    day's last id that refuses every write (idcopies.py); and which copy gave a day's number is
    kept (source), so a line naming the number names the file it came from.

    A number or first id the floor alone gives is never written into .ids.json: the floor keeps
    it (so no id is handed out twice), and .ids.json keeps which numbers rested on the floor
    alone (floor_only), so that a count of lost lines built on them names the floor, however
    many writes and starts later. floor_only is written as soon as the floor is read, not at the
    next id handed out: with index/ removed before that write, nothing would keep them."""

    def __init__(self, home: Home):
        self.path = home.memory / ISSUED_NAME
        self.floor = home.index_dir / FLOOR_NAME
        self._held: dict[str, dict[str, int]] = {}  # handed out (or carried) by this process
        self._found: dict[str, dict[str, int]] | None = None  # both copies, read once
        self._record: dict[str, dict[str, int]] = {}  # .ids.json's alone
        # The earliest id of each kind handed out here, kept for good (the days are not): what
        # tells, however long after, that the journal lost lines from its start (lostbefore.py).
        # .ids.json's (or this process's) apart from the floor's, which may be the damaged one.
        self._first: dict[str, str] = {}
        self._floor_first: dict[str, str] = {}
        # Where each day's number came from: .ids.json's path, the floor's, or None for one this
        # memoryd handed out since it started.
        self._from: dict[str, dict[str, Path | None]] = {}
        # The numbers of a day only the floor gave: (low, high] per range.
        self._floor_only: dict[str, dict[str, list[tuple[int, int]]]] = {}
        self._lock = threading.Lock()

    def last(self, kind: str) -> str | None:
        """The latest id of kind ("edit" or "pending") handed out here, or None."""
        with self._lock:
            days = self._days(kind, self._file())
        if not days:
            return None
        day = max(days)
        return f"{'p-' if kind == 'pending' else ''}{day}-{days[day]:04d}"

    def days(self, kind: str) -> dict[str, int]:
        """The last number of kind handed out on each day kept ({day: number})."""
        with self._lock:
            return self._days(kind, self._file())

    def number(self, kind: str, day: str) -> int:
        """The NNNN of the last id of kind handed out on day (0: none)."""
        with self._lock:
            return self._days(kind, self._file()).get(day, 0)

    def first(self, kind: str) -> str | None:
        """The earliest id of kind handed out here as far as is known: the one kept, or (in a
        file written before it was kept) the first id of the earliest day kept; None for none."""
        with self._lock:
            found = self._file()
            return idsvalue.earliest(self._backed_first(kind), self._floor_side_first(kind, found))

    def first_source(self, kind: str) -> Path | None:
        """The floor's path when first(kind) rests on the floor alone (.ids.json and this
        process give a later one, or none), else None."""
        with self._lock:
            found = self._file()
            backed = self._backed_first(kind)
            floor = self._floor_side_first(kind, found)
        if floor is not None and (backed is None or order(floor) < order(backed)):
            return self.floor
        return None

    def source(self, kind: str, day: str) -> Path | None:
        """The copy number(kind, day) was read from (memory/.ids.json or the floor), or None
        when this memoryd handed it out since it started (its line was journalled then)."""
        with self._lock:
            self._file()
            return self._from.get(kind, {}).get(day)

    def floor_only(self, kind: str, day: str) -> list[tuple[int, int]]:
        """The numbers of day that only the floor gives as handed out, as ranges (low, high]:
        neither .ids.json nor this process's count held them when the floor was read."""
        with self._lock:
            self._file()
            return list(self._floor_only.get(kind, {}).get(day, []))

    def handed_out(self, kind: str, value: str) -> bool:
        """Whether value, written as memoryd writes ids, was surely handed out here: its number
        is at most the last of its day. (Of a day no longer kept: not said.)"""
        day, number = order(value)
        if not day or number < 1 or not value.endswith(f"{day}-{number:04d}"):
            return False
        return number <= self.number(kind, day)

    def note(self, kind: str, value: str) -> None:
        """value was just handed out (its line is written): kept, in memory and in the files."""
        day, number = order(value)
        if not day:
            return
        with self._lock:
            found = self._file()
            first = self._backed_first(kind)
            if first is None or order(value) < order(first):
                first = value
            self._first[kind] = first
            if number > self._days(kind, found).get(day, 0):
                self._from.setdefault(kind, {})[day] = None
            held = self._held.setdefault(kind, {})
            held[day] = max(held.get(day, 0), number)
            self._held[kind] = idsvalue.latest(held)
            self._write(self._record_data(found), self._floor_data(found), kind, value)

    def shown(self, kind: str, days: dict[str, int]) -> None:
        """Numbers of kind ({day: number}) the owner may have been shown in this home that were
        not handed out through this Issued: the lines a restore laid (another home's journal
        and pending.jsonl, or a staged journal's). Kept as handed out, so that none is handed
        out again once a later restore has replaced the files that held them. The first id
        handed out here stays what it was (lostbefore.py): these are not this home's first."""
        with self._lock:
            found = self._file()
            kept = self._days(kind, found)
            new = {day: number for day, number in days.items() if number > kept.get(day, 0)}
            if not new:
                return
            first = self._backed_first(kind)
            if first is not None:
                self._first[kind] = first
            held = self._held.setdefault(kind, {})
            for day, number in new.items():
                held[day] = number
                self._from.setdefault(kind, {})[day] = None
            self._held[kind] = idsvalue.latest(held)
            day = max(new)
            value = f"{'p-' if kind == 'pending' else ''}{day}-{new[day]:04d}"
            self._write(self._record_data(found), self._floor_data(found), kind, value)

    def carry_to(self, other: "Issued") -> None:
        """other keeps the ids handed out here too: a restore's staged journal, whose forget
        lines and restore line must go on after them, not after the archive's older ones. What
        rested on the floor alone counts there for the next ids and is written into its
        .ids.json only as floor_only (still the floor's to name): those lines are appended
        through Journals of their own, which know only what the staged .ids.json says, and with
        memory/ removed whole the floor alone gives every id handed out."""
        with self._lock:
            found = self._file()
            held = {kind: self._days(kind, found) for kind in idsvalue.KINDS}
            backed = {kind: self._backed_days(kind) for kind in idsvalue.KINDS}
            spans_of = {
                kind: {d: list(r) for d, r in v.items()} for kind, v in self._floor_only.items()
            }
            firsts = {kind: self._backed_first(kind) for kind in idsvalue.KINDS}
        with other._lock:
            there = other._file()
            for kind, floor_days in spans_of.items():
                for day, spans in floor_days.items():
                    for low, high in spans:
                        other._add_floor_only(kind, day, low, high)
            for kind, days in held.items():
                for day, number in days.items():
                    if number > backed[kind].get(day, 0) and number > there[kind].get(day, 0):
                        there[kind][day] = number
                        other._from.setdefault(kind, {})[day] = self.floor
        for kind, days in backed.items():
            prefix = "p-" if kind == "pending" else ""
            for day, number in days.items():
                other.note(kind, f"{prefix}{day}-{number:04d}")
            first = firsts[kind]
            if first is not None:
                other.note(kind, first)
        with other._lock:
            other._keep_record(other._file())

    def _days(self, kind: str, found: dict[str, dict[str, int]]) -> dict[str, int]:
        return idsvalue.latest(idsvalue.merged(found.get(kind, {}), self._held.get(kind, {})))

    def _backed_days(self, kind: str) -> dict[str, int]:
        """.ids.json's numbers with this process's: what the floor alone gives left out."""
        return idsvalue.latest(
            idsvalue.merged(self._record.get(kind, {}), self._held.get(kind, {}))
        )

    def _backed_first(self, kind: str) -> str | None:
        kept = self._first.get(kind)
        if kept is not None:
            return kept
        days = self._backed_days(kind)
        return f"{'p-' if kind == 'pending' else ''}{min(days)}-0001" if days else None

    def _floor_side_first(self, kind: str, found: dict[str, dict[str, int]]) -> str | None:
        """The floor's first id, or (a floor written before it was kept) the first id of the
        earliest day the floor gave."""
        kept = self._floor_first.get(kind)
        if kept is not None:
            return kept
        days = [d for d, src in self._from.get(kind, {}).items() if src == self.floor]
        return f"{'p-' if kind == 'pending' else ''}{min(days)}-0001" if days else None

    def _record_data(self, found: dict[str, dict[str, int]]) -> bytes:
        """.ids.json's value: its numbers and this process's, never one the floor alone gave
        (those stay in the floor), and which numbers rested on the floor alone."""
        kept: dict[str, object] = {k: d for k in idsvalue.KINDS if (d := self._backed_days(k))}
        kept[idsvalue.FIRST_KEY] = {k: f for k in idsvalue.KINDS if (f := self._backed_first(k))}
        spans: dict[str, dict[str, list[list[int]]]] = {}
        for kind, days in self._floor_only.items():
            kept_days = self._days(kind, found)
            for day, ranges in days.items():
                if day in kept_days:
                    spans.setdefault(kind, {})[day] = [list(span) for span in ranges]
        if spans:
            kept[idsvalue.FLOOR_ONLY_KEY] = spans
        return json.dumps(kept, sort_keys=True).encode("utf-8")

    def _floor_data(self, found: dict[str, dict[str, int]]) -> bytes:
        kept: dict[str, object] = {k: d for k in idsvalue.KINDS if (d := self._days(k, found))}
        firsts = {
            k: f
            for k in idsvalue.KINDS
            if (f := idsvalue.earliest(self._backed_first(k), self._floor_first.get(k)))
        }
        kept[idsvalue.FIRST_KEY] = firsts
        return json.dumps(kept, sort_keys=True).encode("utf-8")

    def _add_floor_only(self, kind: str, day: str, low: int, high: int) -> bool:
        """Whether the range is new (it was added)."""
        spans = self._floor_only.setdefault(kind, {}).setdefault(day, [])
        if (low, high) in spans:
            return False
        spans.append((low, high))
        del spans[: -idsvalue.FLOOR_ONLY_MOST]
        return True

    def _file(self) -> dict[str, dict[str, int]]:
        """What the files held when first asked: read once, as only this memoryd writes them, so
        that an append does not read them again (what it hands out is in _held)."""
        if self._found is None:
            value = idsvalue.read_copy(self.path, said=True)
            found = idsvalue.all_days(value)
            self._record = {kind: dict(days) for kind, days in found.items()}
            idsvalue.take_firsts(self._first, value)
            self._floor_only = idsvalue.floor_only_of(value.get(idsvalue.FLOOR_ONLY_KEY))
            for kind, days in found.items():
                self._from[kind] = dict.fromkeys(days, self.path)
            # The floor counts where it is higher: .ids.json went with memory/, or is older;
            # never past what memoryd could have handed out (idcopies.py).
            floor = idsvalue.read_copy(self.floor, said=False)
            idcopies.take_floor(
                found, idsvalue.all_days(floor), self.floor, self.path, self._from, NUMBER_MOST
            )
            idsvalue.take_firsts(self._floor_first, floor)
            # What rested on the floor alone counts for the next ids even once the floor is gone
            # (index/ removed since): no id is handed out twice. It stays the floor's to name.
            recorded = {
                kind: {day: max(high for _low, high in spans) for day, spans in days.items()}
                for kind, days in self._floor_only.items()
            }
            idcopies.take_floor(found, recorded, self.floor, self.path, self._from, NUMBER_MOST)
            unrecorded = False
            for kind, days in found.items():
                kept = idsvalue.latest(days)
                for day, number in days.items():
                    below = self._record.get(kind, {}).get(day, 0)
                    if number > below and self._add_floor_only(kind, day, below, number):
                        unrecorded = unrecorded or day in kept
            self._found = found
            if unrecorded:
                # Kept now, not at the next id handed out: a start with no write, then index/
                # removed, would otherwise hand these numbers out again.
                self._keep_record(found)
        return self._found

    def _keep_record(self, found: dict[str, dict[str, int]]) -> None:
        """Write .ids.json as note() would, outside a write: the numbers only the floor gives
        kept as its floor_only. Not where memory/ is gone (removed whole: the floor keeps them,
        and the start says memory/ is gone)."""
        try:
            atomic_write(self.path, self._record_data(found), durable=False)
        except FileNotFoundError:
            pass
        except OSError as e:
            why = e if isinstance(e, NotRegular) else e.strerror
            log.warning("%s: the ids only %s gives not kept: %s", self.path, self.floor, why)

    def _write(self, record: bytes, spare: bytes, kind: str, value: str) -> None:
        try:
            atomic_write(self.path, record, durable=False)
        except OSError as e:
            why = e if isinstance(e, NotRegular) else e.strerror
            log.warning("%s: the last %s id (%s) not kept: %s", self.path, kind, value, why)
        try:
            if os.path.isdir(self.floor.parent):
                atomic_write(self.floor, spare, durable=False)
        except OSError as e:
            # The spare: .ids.json above is the record, and says its own failure; the floor's is
            # said once a process, so that a floor that can never be written (a folder left in its
            # place) is not a spare the owner believes is kept.
            if self.floor not in _floor_unwritten:
                _floor_unwritten.add(self.floor)
                why = str(e) if isinstance(e, NotRegular) else (e.strerror or str(e))
                log.warning(
                    "%s: the spare copy of the last ids handed out cannot be written (%s); ids "
                    "stay unique by memory/.ids.json and the journal, but would start again from "
                    "them if memory/ were removed whole: remove or mend it",
                    self.floor,
                    why,
                )


# The floors a write failed for, said once a process (Issued._write).
_floor_unwritten: set[Path] = set()


def remove_floor_leftovers(home: Home) -> None:
    """At start: a temporary file of the floor's a kill left (the floor is whole, old or new)."""
    for left in home.index_dir.glob(f".{FLOOR_NAME}.*.tmp"):
        try:
            left.unlink()
        except OSError as e:
            log.warning("%s: a leftover temporary file cannot be removed: %s", left, e.strerror)
