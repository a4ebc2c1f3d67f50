"""An identity action and the file as it is now -> the planned change (spec 5). Pure: no I/O.

plan() takes the parsed arguments of add, replace, remove or consolidate and the entries of the
file as read from disk just now, and returns the entries before and after and the entries leaving
the file (moved or dropped, in order), or raises EditRefused with the sentence for the model.
Every rule is checked before anything is decided, so a refused edit changes nothing.

Entries are compared canonically (entries.canonical): an old in the other Unicode normal form names
the entry the file holds, and an entry in either form is a duplicate of the other; the file keeps
each entry in the form it was written. A file that breaks the entry rules by hand (the same entry
twice) cannot be edited: old could not name one entry. A file the owner left over its limit can be
edited as long as the result fits: remove and consolidate bring it back under, add is refused with
the limit sentence.

A session's edit is planned from what its block shows (hidden: the entries the block leaves out,
their class above [index] max_class as it is now, or failing the check). Those are not the
session's to name or to be told of: an old that matches only one of them is answered as an old
that matches no entry, consolidate names only the others and leaves them in their places, and no
refusal quotes their text (one that must point at such an entry names it by file and number, as
bxctl memory block lists it). A text equal to one is still a duplicate (spec 5), so an exact guess
is told that the file holds it, and nothing more.
"""

from collections.abc import Collection
from dataclasses import dataclass
from typing import cast

from memoryd.errors import EditRefused, FileInvalid
from memoryd.memory import check, entries
from memoryd.memory.entries import FILE_OF_ARG, LIMITS, count, shorten, visible
from proto.tools import AddArgs, ConsolidateArgs, RemoveArgs, ReplaceArgs, note_length_problem
from proto.trim import WHITE_SPACE, WHITE_SPACE_RUN, trim, words

IdentityArgs = AddArgs | ReplaceArgs | RemoveArgs | ConsolidateArgs


def limit_sentence(file: str, length: int) -> str:
    return (
        f"{file} would be {count(length)} of {count(LIMITS[file])} characters; "
        "use consolidate to move entries to notes"
    )


def updated_sentence(file: str, length: int) -> str:
    return (
        f"{file} updated ({count(length)} of {count(LIMITS[file])} characters); "
        "it takes effect in the next session"
    )


def duplicate_sentence(file: str) -> str:
    return f"refused: {file} already holds this entry"


def stale_sentence(file: str, old: str, before: tuple[str, ...]) -> str:
    """Why old names no entry. Matching stays exact (spec 5; canonically equal forms are the
    same text, entries.canonical), but an old that differs from an
    entry only in its white space (a final newline, a line break written as a space) is told so,
    with the difference shown, and old is quoted with its white space visible: quoted with runs of
    white space joined, it would read as the very entry it failed to match."""
    near = next((e for e in before if words(e) == words(old)), None)
    if near is None:
        return (
            f'refused: old "{visible(old)}" matches no entry of {file} as it is now; '
            "the file may have changed since this session started"
        )
    return (
        f'refused: old differs from the entry "{visible(near)}" of {file} only in its white space '
        f"({spacing_difference(old, near)}); old must be the entry exactly as the file holds it"
    )


def spacing_difference(old: str, entry: str) -> str:
    """Where old's white space differs from entry's, for two texts of the same words."""
    said: list[str] = []
    old_lead, entry_lead = _lead(old), _lead(entry)
    if old_lead != entry_lead:
        said.append(_edge("starts", old_lead, entry_lead))
    old_runs, entry_runs = WHITE_SPACE_RUN.findall(trim(old)), WHITE_SPACE_RUN.findall(trim(entry))
    for word, old_run, entry_run in zip(words(entry), old_runs, entry_runs, strict=False):
        if old_run != entry_run:
            said.append(
                f'after "{visible(word, 40)}" old has "{visible(old_run)}" where the entry has '
                f'"{visible(entry_run)}"'
            )
            break
    old_tail, entry_tail = _tail(old), _tail(entry)
    if old_tail != entry_tail:
        said.append(_edge("ends", old_tail, entry_tail))
    return "; ".join(said)


def _edge(which: str, old_edge: str, entry_edge: str) -> str:
    if not entry_edge:
        return f'old {which} with "{visible(old_edge)}", the entry does not'
    if not old_edge:
        return f'the entry {which} with "{visible(entry_edge)}", old does not'
    return f'old {which} with "{visible(old_edge)}", the entry with "{visible(entry_edge)}"'


def _lead(text: str) -> str:
    return text[: len(text) - len(text.lstrip(WHITE_SPACE))]


def _tail(text: str) -> str:
    return text[len(text.rstrip(WHITE_SPACE)) :]


def same_sentence() -> str:
    return "refused: the new text is the same as old; nothing to change"


def named_twice_sentence(file: str, old: str) -> str:
    return f'refused: consolidate names the entry "{shorten(old)}" of {file} more than once'


def missing_sentence(file: str, missing: list[str]) -> str:
    more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
    return (
        f'refused: consolidate must name every entry of {file} once; it leaves out "'
        f'{shorten(missing[0])}"{more}'
    )


def twice_in_result_sentence(file: str, entry: str) -> str:
    return f'refused: consolidate would leave the entry "{shorten(entry)}" twice in {file}'


def hand_duplicate_sentence(file: str, entry: str) -> str:
    return (
        f'refused: {file} holds the entry "{shorten(entry)}" twice (edited by hand); '
        "the owner must fix the file before it can be edited"
    )


def hand_duplicate_refs_sentence(file: str, numbers: list[int]) -> str:
    """For an entry held twice that the session's block leaves out: named by its places, as
    bxctl memory block lists them, never by its text."""
    refs = " and ".join(f"{file}:{n}" for n in numbers)
    return (
        f"refused: {file} holds one entry twice ({refs}, edited by hand); "
        "the owner must fix the file before it can be edited"
    )


def _hand_duplicate(file: str, before: tuple[str, ...], hidden: Collection[str]) -> str | None:
    duplicate = entries.first_duplicate(before)
    if duplicate is None:
        return None
    key = entries.canonical(duplicate)
    numbers = [n for n, e in enumerate(before, start=1) if entries.canonical(e) == key]
    if any(before[n - 1] in hidden for n in numbers):
        return hand_duplicate_refs_sentence(file, numbers)
    return hand_duplicate_sentence(file, duplicate)


@dataclass(frozen=True)
class Removal:
    """An entry leaving the file for notes.md: kind is moved or dropped."""

    kind: str
    text: str


@dataclass(frozen=True)
class Plan:
    action: str
    file: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    removals: tuple[Removal, ...] = ()

    @property
    def length(self) -> int:
        return entries.length(self.after)


def new_entry(text: str) -> str:
    """A new or rewritten entry as it will be stored; EditRefused when it breaks a rule."""
    entry = entries.normalise(text)
    sentence = entries.entry_problem(entry)
    if sentence is not None:
        raise EditRefused(sentence)
    check.check(entry)
    return entry


def new_note(text: str) -> str:
    """A note as it will be stored; EditRefused when too long, empty or failing the check."""
    problem = note_length_problem(text)
    if problem is not None:
        raise EditRefused(f"refused: {problem}")
    note = trim(text)
    check.check(note)
    return note


def plan(
    args: IdentityArgs, current: list[str] | tuple[str, ...], hidden: Collection[str] = ()
) -> Plan:
    """The change args make to a file whose entries are current; hidden: those of current the
    caller's block leaves out (a session's edit), which it may neither name nor be told of."""
    file = FILE_OF_ARG[args.file]
    before = tuple(current)
    twice = _hand_duplicate(file, before, hidden)
    if twice is not None:
        raise FileInvalid(twice)
    shown = tuple(e for e in before if e not in hidden)
    removals: tuple[Removal, ...]
    if isinstance(args, AddArgs):
        after, removals = _add(file, before, args), ()
    elif isinstance(args, ReplaceArgs):
        after, removals = _replace(file, before, shown, args), ()
    elif isinstance(args, RemoveArgs):
        after, removals = _remove(file, before, shown, args)
    elif isinstance(args, ConsolidateArgs):
        after, removals = _consolidate(file, before, shown, args)
    else:
        raise EditRefused("refused: not an action that edits memory.md or user.md")
    result = Plan(args.action, file, before, after, removals)
    if result.length > LIMITS[file]:
        raise EditRefused(limit_sentence(file, result.length))
    return result


def _held(file: str, shown: tuple[str, ...], old: str) -> str:
    """The entry old names, as the file holds it (old matched canonically: entries.canonical),
    among the entries the caller is shown: one it is not is as no entry, near match included."""
    entry = entries.find(shown, old)
    if entry is None:
        raise EditRefused(stale_sentence(file, old, shown))
    return entry


def _add(file: str, before: tuple[str, ...], args: AddArgs) -> tuple[str, ...]:
    entry = new_entry(args.text)
    if entries.find(before, entry) is not None:
        raise EditRefused(duplicate_sentence(file))
    return (*before, entry)


def _replace(
    file: str, before: tuple[str, ...], shown: tuple[str, ...], args: ReplaceArgs
) -> tuple[str, ...]:
    old = _held(file, shown, args.old)
    entry = new_entry(args.text)
    if entries.canonical(entry) == entries.canonical(old):
        raise EditRefused(same_sentence())
    if entries.find(before, entry) is not None:
        raise EditRefused(duplicate_sentence(file))
    return tuple(entry if e == old else e for e in before)


def _remove(
    file: str, before: tuple[str, ...], shown: tuple[str, ...], args: RemoveArgs
) -> tuple[tuple[str, ...], tuple[Removal, ...]]:
    old = _held(file, shown, args.old)
    return tuple(e for e in before if e != old), (Removal("dropped", old),)


def _consolidate(
    file: str, before: tuple[str, ...], shown: tuple[str, ...], args: ConsolidateArgs
) -> tuple[tuple[str, ...], tuple[Removal, ...]]:
    """Every entry shown named once; the entries not shown stay as they are, in their places."""
    named: set[str] = set()
    held: dict[int, str] = {}
    for number, item in enumerate(args.entries):
        if item.old is None:
            continue
        old = _held(file, shown, item.old)
        if old in named:
            raise EditRefused(named_twice_sentence(file, item.old))
        named.add(old)
        held[number] = old
    missing = [e for e in shown if e not in named]
    if missing:
        raise EditRefused(missing_sentence(file, missing))
    after: list[str] = []
    removals: list[Removal] = []
    for number, item in enumerate(args.entries):
        choice = item.choice
        # ConsolidateEntry's own check: every choice but new has old, rewrite and new have text.
        if choice == "keep":
            after.append(held[number])
        elif choice in ("rewrite", "new"):
            after.append(new_entry(cast(str, item.text)))
        else:
            removals.append(Removal("moved" if choice == "move" else "dropped", held[number]))
    twice = entries.first_duplicate(after)
    if twice is not None:
        raise EditRefused(twice_in_result_sentence(file, twice))
    for place, entry in enumerate(before):
        if entry in shown:
            continue
        # A new text equal to an entry not shown: quoted as the session wrote it, not the file.
        again = entries.find(after, entry)
        if again is not None:
            raise EditRefused(twice_in_result_sentence(file, again))
        after.insert(min(place, len(after)), entry)
    return tuple(after), tuple(removals)
