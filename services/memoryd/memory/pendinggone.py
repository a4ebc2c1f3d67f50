"""The staged writes gone from pending.jsonl (spec 5): ids memoryd handed out (Issued) that
neither pending.jsonl holds nor the journal resolved, so their lines left the file (deleted, or
replaced by an older copy). pending says them, accept and reject of one say so, and memoryd's start
logs them once. Those only the floor gives (index/ids-handed-out.json) are said apart, naming it,
as it may be the damaged copy; and those handed out before a forget line that names no staged
write (an older memoryd's forget took such writes without naming them) are said as probably taken
by it, never as lost.

Why a module of its own: review.py stages, lists and resolves what waits; this only works out and
says what is missing, reading the journal's forgets only when a number is missing.
"""

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.journal import forgotpending, idcopies, idform
from memoryd.journal.idform import day_numbers
from memoryd.journal.journal import Journal
from memoryd.journal.linefile import parse_line, raw_lines
from memoryd.memory import pendingspans
from memoryd.memory.pendingline import PendingLine
from memoryd.memory.pendingspans import Found, Span
from proto.plural import counted

# review.py's logger: these are the review's lines, and keep its name.
log = logging.getLogger("memoryd.memory.review")

LOST_BACK = (
    "A backup made while they waited holds their lines: tar -xzOf ARCHIVE memory/pending.jsonl "
    "prints the lines and changes nothing (runbook: journal-lost)"
)


@dataclass(frozen=True)
class Gone:
    """The pending ids handed out that neither pending.jsonl holds nor the journal resolves:
    those said lost, those only the floor gives, and those an older memoryd's forget probably
    took (by forget, oldest first)."""

    lost: Found | None = None
    floor: Found | None = None
    taken: list[tuple[forgotpending.Unnamed, Found]] = field(default_factory=list)


class GoneWrites:
    """What is gone of the staged writes of pending.jsonl at path, by the journal's ids; held:
    every pending id the file names (its damaged lines' too) or the journal resolved."""

    def __init__(self, path: Path, journal: Journal, held: Callable[[], set[str]]):
        self.path = path
        self.journal = journal
        self._held = held

    def gone(self) -> Gone:
        """The pending ids handed out that neither pending.jsonl holds nor the journal resolved:
        those .ids.json or this process's count gives (apart, those a forget naming no staged
        write probably took), and those the floor alone gives."""
        issued = self.journal.issued
        days = issued.days("pending")
        if not days:
            return Gone()  # review never staged a write here: nothing to read
        try:
            held = self._held()
        except OSError:
            return Gone()  # pending and accept say the file's own error
        backed: list[tuple[str, Span, set[int]]] = []
        floor: list[Found] = []
        for day, top in sorted(days.items()):
            numbers = set(day_numbers(sorted(held), day))
            on_floor = pendingspans.floor_spans(issued.floor_only("pending", day), numbers, top)
            for span in on_floor:
                floor += pendingspans.missing(day, span, numbers)
            spans = pendingspans.between(on_floor, top)
            backed += [
                (day, span, numbers) for span in spans if pendingspans.missing(day, span, numbers)
            ]
        lost, taken = self._apart(backed)
        return Gone(pendingspans.summed(lost), pendingspans.summed(floor), taken)

    def _apart(
        self, spans: list[tuple[str, Span, set[int]]]
    ) -> tuple[list[Found], list[tuple[forgotpending.Unnamed, Found]]]:
        """The missing numbers of spans (day, (low, high], the day's numbers held) in order: those
        no forget naming no staged write was made after, and by such forget those it probably
        took. The journal is searched for such forgets only when a number is missing."""
        if not spans:
            return [], []
        months = self.journal.month_files()
        forgets = forgotpending.unnamed(months, spans[0][0][:7])
        stamps = self._stamps() if forgets else {}
        lost: list[Found] = []
        taken: dict[forgotpending.Unnamed, list[Found]] = {}
        for day, span, held in spans:
            for piece, forget in pendingspans.by_taker(day, span, stamps.get(day, []), forgets):
                found = pendingspans.missing(day, piece, held)
                if forget is None:
                    lost += found
                else:
                    taken.setdefault(forget, []).extend(found)
        said = [(forget, pendingspans.summed(found)) for forget, found in taken.items()]
        return lost, [(forget, found) for forget, found in said if found is not None]

    def _stamps(self) -> dict[str, list[tuple[int, dt.datetime]]]:
        """The number and time of each line pending.jsonl holds, by day, in order of number: a
        write was handed out after each of its day's lower numbers. Damaged lines are passed
        over without a word (pending says them)."""
        found: dict[str, list[tuple[int, dt.datetime]]] = {}
        try:
            lines = list(raw_lines(self.path))  # a block of whole lines at a time
        except OSError:
            return {}
        for _, raw, _ in lines:
            item = parse_line(raw, PendingLine)
            when = None if not isinstance(item, PendingLine) else forgotpending.moment(item.time)
            if isinstance(item, PendingLine) and when is not None:
                day, number = idform.order(item.id)
                found.setdefault(day, []).append((number, when))
        return {day: sorted(stamps) for day, stamps in found.items()}

    def sentence(self) -> str | None:
        """What pending adds when staged writes left pending.jsonl (None: none did); those only
        the floor gives are said apart, naming it, and so are those an older forget took."""
        gone = self.gone()
        said = self._lost_lines(gone) + self._taken_lines(gone)
        return "\n".join(said) if said else None

    def _lost_lines(self, gone: Gone) -> list[str]:
        said = [] if gone.lost is None else [self._lost_said(gone.lost)]
        floor = self.journal.issued.floor
        return said + ([] if gone.floor is None else [self._lost_said(gone.floor, floor)])

    def _taken_lines(self, gone: Gone) -> list[str]:
        return [self._taken_said(forget, found) for forget, found in gone.taken]

    def _taken_said(self, forget: forgotpending.Unnamed, found: Found) -> str:
        n, first, last = found
        which = first if n == 1 else f"{first} to {last}"
        return (
            f"({counted(n, 'staged write')} ({which}) memoryd answered as pending "
            f"{'was' if n == 1 else 'were'} probably taken by forget {forget.edit} on "
            f"{forget.date}, with the text the owner forgot: {'it was' if n == 1 else 'they were'}"
            f" handed out before that forget, and neither {self.path} holds "
            f"{'it' if n == 1 else 'them'} nor the journal an accept or reject; an older "
            "memoryd's forget did not name the staged writes it took. Nothing waits under "
            f"{'that id' if n == 1 else 'those ids'})"
        )

    def _lost_said(self, found: Found, floor: Path | None = None) -> str:
        """The sentence for staged writes gone; floor: the floor's path when only it gives their
        numbers, which the sentence then names (it may be the damaged one)."""
        n, first, last = found
        which = first if n == 1 else f"{first} to {last}"
        according = "" if floor is None else f" according to {idcopies.named_by(floor)}"
        damaged = "" if floor is None else idcopies.damaged_too(floor)
        return (
            f"({counted(n, 'staged write')} ({which}) memoryd answered as pending{according} "
            f"{'is' if n == 1 else 'are'} gone{damaged}: neither {self.path} holds "
            f"{'it' if n == 1 else 'them'} nor the journal an accept or reject: "
            f"{'its line' if n == 1 else 'their lines'} left the file (deleted, replaced by an "
            f"older copy, or removed by hand). {LOST_BACK})"
        )

    def say(self) -> None:
        """At start: the staged writes gone from pending.jsonl, said once; those an older forget
        probably took are no damage, said as information."""
        gone = self.gone()
        for line in self._lost_lines(gone):
            log.warning("%s: %s", self.path, line.strip("()"))
        for line in self._taken_lines(gone):
            log.info("%s: %s", self.path, line.strip("()"))

    def left_sentence(self, pending_id: str) -> str:
        """The refusal of a staged write whose line left pending.jsonl; naming the floor when
        only the floor gives it as handed out, and the forget that probably took it when one
        naming no staged write was made since it was handed out."""
        issued = self.journal.issued
        day, number = idform.order(pending_id)
        held = set(day_numbers(sorted(self._held()), day))
        if pendingspans.floor_only(number, issued.floor_only("pending", day), held):
            return (
                f"refused: according to {idcopies.named_by(issued.floor)}, {pending_id} was "
                f"staged (or {issued.floor.name} is damaged), but its line has left {self.path} "
                "since (deleted, replaced by an older copy, or removed by hand) and the journal "
                "holds no accept or reject of it, so it can be neither accepted nor rejected. "
                f"{LOST_BACK}"
            )
        taken = self._taken_refusal(pending_id, held)
        if taken is not None:
            return taken
        return (
            f"refused: {pending_id} was staged, but its line has left {self.path} since "
            "(deleted, replaced by an older copy, or removed by hand) and the journal holds "
            "no accept or reject of it, so it "
            f"can be neither accepted nor rejected. {LOST_BACK}"
        )

    def _taken_refusal(self, pending_id: str, held: set[int]) -> str | None:
        """The refusal of a missing staged write an older memoryd's forget probably took, or
        None when no forget naming no staged write was made since it was handed out."""
        day, number = idform.order(pending_id)
        _, taken = self._apart([(day, (number - 1, number), held)])
        if not taken:
            return None
        forget = taken[0][0]
        return (
            f"refused: {pending_id} was probably taken by forget {forget.edit} on {forget.date}, "
            "with the text the owner forgot: it was handed out before that forget, and neither "
            f"{self.path} holds it nor the journal an accept or reject (an older memoryd's "
            "forget did not name the staged writes it took); nothing waits under that id"
        )
