"""What an id or a text given to `bxctl memory forget` names: a Target, its text(s) and the keys
it is listed under in forgotten.jsonl, and where memoryd holds that text (places.py).

Apart from forget.py because naming is the part that reads the most (notes.md, the identity
files, the index's rows of a session record, and for a bare text every place memoryd holds one),
and the preview, the reader's preparation and the writer's run each resolve the id again: what it
names may have changed between them (forget.check_of).

A note's number is its place in notes.md, and the owner may edit notes.md by hand: the number
search printed names another note once a note before it is removed. So note:N is taken only
while the index holds notes.md as it is now (index/notesseen.py) and holds the same text under
N; otherwise forget refuses and the owner searches again, which catches the index up. Nothing but
the note search showed under N is forgotten, whatever was edited in between. Promote takes note:N
on the same terms (check_shown): the note it takes goes into every prompt.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from memoryd.data import matching, unfinished
from memoryd.data.places import Find, Places, notes_of, places
from memoryd.data.purge import rows_of
from memoryd.errors import AdminRefused
from memoryd.home import Home
from memoryd.index.settings import cap_text
from memoryd.journal import forgotten, forgottenmarker
from memoryd.journal.journal import IDENTITY_FILES
from memoryd.memory import shown
from memoryd.memory.memfiles import read_entries
from proto.messages import SESSION_ID_PATTERN
from proto.plural import counted
from proto.trim import trim

NOTE = re.compile(r"^note:([0-9]{1,9})\Z")
ENTRY = re.compile(r"^(memory\.md|user\.md):([0-9]{1,4})\Z")
SESSION = re.compile(rf"^session:({SESSION_ID_PATTERN.strip('^$')}):([0-9]{{1,12}})\Z")


@dataclass
class Target:
    id: str
    what: str  # said to the owner, without the text
    texts: list[str]
    keys: list[str] = field(default_factory=list)
    resumed: bool = False  # the forget stopped part way, finished now (unfinished.py)


def _session_texts(index, session: str, record: int, rowids: list[int]) -> list[str]:
    """The indexed texts of a session record (see _indexed_texts)."""
    return _indexed_texts(
        index, "s.kind = 'session' AND s.session = ? AND s.record = ?", (session, record), rowids
    )


def _indexed_texts(index, where: str, params: tuple, rowids: list[int]) -> list[str]:
    """The texts of the rows where (a fixed condition; params bound) names: by the rowids found
    before when they still hold it (no scan on the writer), else by a scan, in rowid order."""
    with index.reader() as conn:
        if rowids:
            marks = ",".join("?" * len(rowids))
            rows = conn.execute(
                "SELECT h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
                f" WHERE s.rowid IN ({marks}) AND {where} ORDER BY s.rowid",  # noqa: S608
                (*rowids, *params),
            ).fetchall()
            if len(rows) == len(rowids):
                return [r[0] for r in rows]
        rows = conn.execute(
            "SELECT h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
            f" WHERE {where} ORDER BY s.rowid",  # noqa: S608
            params,
        ).fetchall()
    return [r[0] for r in rows]


# The forget that stopped part way, read from its record: unfinished.read within a forget's own
# turn (a record standing then is a stop), owner/datalock.stopped_forget for a preview, which runs
# beside a forget whose own record that may be.
Stopped = Callable[[Home], unfinished.Unfinished | None]


def resolve(
    home: Home,
    index,
    journal,
    ref: str,
    hints: dict | None = None,
    stopped_forget: Stopped = unfinished.read,
) -> Target:
    """What ref names, with its text(s); AdminRefused when it names nothing to forget."""
    stopped = stopped_forget(home)
    if stopped is not None:
        return _finishing(stopped, ref)
    m = NOTE.match(ref)
    if m:
        number = int(m.group(1))
        for note in notes_of(home):
            if note.number == number:
                what = f"{ref} ({note.kind} {note.time} in session {note.session})"
                if forgottenmarker.is_marker(note.text):
                    key = forgotten.note_key(number)
                    if key in forgotten.keys(home) and not _left_in_index(index, key):
                        raise AdminRefused(f"refused: {ref} is already forgotten")
                    # A forget stopped before it listed the key, or before the index let go of
                    # its rows (a full disk): finish it.
                    return Target(ref, what, [], [key])
                # Its text is about to be erased from notes.md: it must be the note search
                # showed. (A marker has none left: finishing a forget erases nothing more.)
                rowids = (hints or {}).get(forgotten.note_key(number), [])
                check_shown(index, ref, note.text, rowids)
                return Target(ref, what, [note.text])
        raise AdminRefused(f"refused: notes.md holds no note {ref}")
    m = ENTRY.match(ref)
    if m:
        file, number = m.group(1), int(m.group(2))
        current = read_entries(home, file)
        text = entry_shown(index, file, ref, number, current)
        now = current.index(text) + 1
        by = shown.printed_by(index, file, number) or shown.STATS
        moved = f", the one {by} printed there, entry {now} now" if now != number else ""
        what = f"{ref} (entry {number} of {file}, counted from 1{moved})"
        return Target(ref, what, [text])
    m = SESSION.match(ref)
    if m:
        session, record = m.group(1), int(m.group(2))
        key = forgotten.session_key(session, record)
        texts = _session_texts(index, session, record, (hints or {}).get(key, []))
        if key in forgotten.keys(home) and not texts:
            raise AdminRefused(f"refused: {ref} is already forgotten")
        if not texts:
            raise AdminRefused(
                f"refused: the index holds no record {record} of session {session} "
                "(name it as search prints it)"
            )
        return Target(ref, f"record {record} of session {session}", texts, [key])
    text = trim(ref)
    for file in IDENTITY_FILES:
        if text in read_entries(home, file):
            return Target("entry", f"an entry of {file}", [text])
    # Any other exact text memoryd still holds (an entry removed long ago that the journal keeps,
    # a record the index holds, or what a forget stopped by a crash left behind) can be
    # forgotten by its words.
    if text and places(home, journal, [text], [], index).anything():
        return Target("text", "the text given", [text])
    raise AdminRefused(
        f"refused: {ref[:64]!r} names nothing to forget: give note:N or session:ID:N (as search "
        "prints them, from 0), memory.md:N or user.md:N (as stats prints them, from 1) or an "
        "entry's or a note's exact text"
    )


def _finishing(stopped: unfinished.Unfinished, ref: str) -> Target:
    """While a forget stopped part way is recorded, only it is taken, by the id or the text
    given to it or by the exact words of its text: the files it rewrote no longer number their
    entries and notes as when it was given, so any other id might name what nobody meant."""
    text = trim(ref)
    if ref == stopped.ref or (text and any(matching.same(text, t) for t in stopped.texts)):
        return Target(stopped.id, stopped.what, list(stopped.texts), list(stopped.keys), True)
    named = stopped.ref if _is_id(stopped.ref) else "the exact words of the text it was given"
    raise AdminRefused(
        f"refused: a forget stopped part way is not finished; nothing was forgotten: run "
        f"bxctl memory forget {named} to finish it first, then search again for ids"
    )


def _is_id(ref: str) -> bool:
    return bool(NOTE.match(ref) or ENTRY.match(ref) or SESSION.match(ref))


AGAIN = "nothing was forgotten: run bxctl memory stats and forget the entry by the ref it prints"


def entry_shown(index, file: str, ref: str, number: int, current: list[str]) -> str:
    """The text of the entry the last bxctl memory stats or block of this memoryd printed as ref
    (memory/shown.py), which the file still holds, wherever it stands now: any write since may
    have moved the numbers, and forget must erase what the owner saw under the number, never
    what moved into its place. Refused when the file holds that entry no more, or when a print
    of the file is kept but no command printed ref; the refusal names the entry by its ref alone
    (memoryd's log keeps what it refuses). When no stats or block of this memoryd printed the
    file (the owner read the number off the file, or off a stats before memoryd's start), the
    entry at number now: bxctl shows its text before it asks, and the forget checks it is still
    that text (check_of)."""
    printed = shown.printed(index, file)
    lost = shown.unreadable(index) if printed is None else None
    if lost is not None:
        raise AdminRefused(
            f"refused: the numbers the last bxctl memory stats printed cannot be read back "
            f"({lost}), so {ref} may name another entry now; {AGAIN}"
        )
    if printed is None:
        if not 1 <= number <= len(current):
            raise AdminRefused(_no_entry(file, ref, len(current)))
        return current[number - 1]
    text = printed[number - 1] if 1 <= number <= len(printed) else None
    if text is None:
        if not 1 <= number <= len(current):
            raise AdminRefused(_no_entry(file, ref, len(current)))
        raise AdminRefused(_not_printed(index, file, ref))
    if text not in current:
        by = shown.printed_by(index, file, number)
        raise AdminRefused(
            f"refused: {file} no longer holds the entry bxctl memory {by} printed as {ref} (a "
            f"write since removed or changed it); {AGAIN} now"
        )
    return text


def _not_printed(index, file: str, ref: str) -> str:
    """A number the file holds now but no print kept names: after a stats, a write since added
    it; after a block alone, block printed other numbers of file."""
    if shown.printers(index, file) == {shown.BLOCK}:
        return (
            f"refused: bxctl memory block printed no {ref} and no stats printed {file} since; "
            f"{AGAIN}"
        )
    return (
        f"refused: the last bxctl memory stats printed no {ref} (a write since added it); "
        f"{AGAIN} now"
    )


def _no_entry(file: str, ref: str, held: int) -> str:
    """An entry number is its place in the file counted from 1 (a note's and a session record's
    count from 0): said whenever one names no entry, so that no owner takes memory.md:1 for the
    second entry."""
    if held == 0:
        return f"refused: {file} holds no entries, so there is no {ref}"
    refs = f"{file}:1 (as bxctl memory stats prints it)"
    if held > 1:
        refs = f"{file}:1 to {file}:{held} (as bxctl memory stats prints them)"
    return (
        f"refused: {file} holds {counted(held, 'entry', 'entries')}, numbered from 1: {refs}; "
        f"there is no {ref}"
    )


# What the refusals say was not done, and what to do again with the id search prints now.
Doing = Literal["forget", "promote"]
UNDONE: dict[str, str] = {"forget": "forgotten", "promote": "promoted"}


def check_shown(
    index, ref: str, text: str, rowids: list[int] | None = None, doing: Doing = "forget"
) -> None:
    """Refused unless note:N (ref) still names the note the owner's last search showed, whose
    text notes.md holds under N now: forget erases it, promote puts it into every prompt, so
    neither may take another note that a hand edit of notes.md moved into its place. doing is
    the command refused ("forget" or "promote"); rowids, the rows found for it before, if any."""
    _notes_read(index, ref, doing)
    _same_note(index, ref, text, rowids or [], doing)


def _notes_read(index, ref: str, doing: Doing) -> None:
    """Refused when notes.md changed since the index last read it, or ref's number was not
    printed by a search or stats since the index last read notes.md from its start
    (index/notesseen.py): the number may be another note's now."""
    seen = index.notes_seen
    number = int(ref.removeprefix("note:"))
    if seen.behind(number):
        printed = seen.printed.get(number)
        if printed is None:
            why = f"no bxctl memory search or stats has printed {ref} since memoryd started"
        elif printed != seen.renumbered:
            why = (
                "memory/notes.md was read again from its start (edited by hand, or restored)"
                f" since a bxctl memory search or stats printed {ref}"
            )
        else:
            why = "memory/notes.md changed since the last bxctl memory search or stats"
        raise AdminRefused(
            f"refused: {why}, so {ref} may name another note than search showed; nothing was "
            f"{UNDONE[doing]}: search again and {doing} the note by the id it prints now"
        )


def _same_note(index, ref: str, text: str, rowids: list[int], doing: Doing) -> None:
    """Refused when the index holds another text under the note's number (notes.md was
    rewritten in a way its stat did not show); a note the index does not hold (its class is above
    the index's, or it is empty) is taken as notes.md numbers it."""
    indexed = cap_text(text, index.settings.max_record_bytes) or text
    held = _note_texts(index, int(ref.removeprefix("note:")), rowids)
    if any(other != indexed for other in held):
        raise AdminRefused(
            f"refused: notes.md holds another note as {ref} than the index does (notes.md was "
            f"edited); nothing was {UNDONE[doing]}: run bxctl memory search again and {doing} "
            "the note by the id it prints now"
        )


def _note_texts(index, number: int, rowids: list[int]) -> list[str]:
    """The indexed texts of note number (see _indexed_texts)."""
    return _indexed_texts(
        index, "s.kind IN ('noted', 'moved', 'dropped') AND s.record = ?", (number,), rowids
    )


def _left_in_index(index, key: str) -> bool:
    with index.reader() as conn:
        return bool(rows_of(conn, key))


def where_held(service, target: Target, find: Find | None = None) -> Places:
    store = service.store
    return places(store.home, store.journal, target.texts, target.keys, service.index, find)
