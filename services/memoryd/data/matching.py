"""What forget takes as holding the text it forgets: one rule for every place it looks.

A place holds the text when a value that carries what was written (an entry, a note, a recall
query, the text or old text of a memory call, the query of a recall call, the content of a session
record) is that text exactly, surrounding white space aside: Unicode White_Space (proto.trim), as
the parse of memory.md and notes.md trims, so a text is one text to the parse and to forget. A
longer value that merely contains it ("ok" in "a book") does not, and neither does a field that
says how something was written (action, file, class, session): forget removes what was written,
the way the owner named it, and leaves the journal's account of each edit readable.
"""

import json
import re
from collections.abc import Iterator

from memoryd.journal import forgetcuts
from memoryd.journal.forgetlines import text_listed
from proto.trim import trim

NOTE_KINDS = ("noted", "moved", "dropped")
# The arguments of the memory and recall tools that carry written text (at any depth: a
# consolidate's entries have their own old and text).
CALL_TEXT = frozenset({"text", "old", "query"})
# Of those, the ones a call wrote itself: an old names an entry already there, which another
# session may have written, and is no text of the call's own.
CALL_WROTE = frozenset({"text", "query"})


def same(value: object, text: str) -> bool:
    return isinstance(value, str) and trim(value) == trim(text)


def _entries(value: object, text: str, marker: object) -> object:
    if not isinstance(value, list):
        return value
    return [marker if same(v, text) else v for v in value]


def journal_change(line: dict, text: str, marker: object) -> dict:
    """A journal line with text replaced by marker where an entry (before, after), a note or
    the promoted note's reference holds it."""
    out = dict(line)
    for key in ("before", "after"):
        if key in out:
            out[key] = _entries(out[key], text, marker)
    if isinstance(out.get("notes"), list):
        out["notes"] = [
            {**n, "text": marker} if isinstance(n, dict) and same(n.get("text"), text) else n
            for n in out["notes"]
        ]
    note = out.get("note")
    if isinstance(note, dict) and same(note.get("ref"), text):
        out["note"] = {**note, "ref": marker}
    return out


_HELD = object()


def journal_holds(line: dict, text: str) -> bool:
    return journal_change(line, text, _HELD) != line


def query_change(line: dict, text: str, marker: str) -> dict:
    """A recall log line with its query replaced by marker when the query is text."""
    return {**line, "query": marker} if same(line.get("query"), text) else line


def query_holds(line: dict, text: str) -> bool:
    return same(line.get("query"), text)


def pending_holds(line: dict, text: str) -> bool:
    """A pending write whose arguments carry text: once text is forgotten it cannot be
    accepted, so the write goes with it."""
    return any(same(value, text) for value in call_texts(line.get("args")))


def export_change(item: dict, text: str, marker: str) -> dict | None:
    """An export's item as forget leaves it: an entry that is text goes (forget removed it from
    its file), a note that is text keeps its place with the marker (as in notes.md)."""
    if not same(item.get("text"), text):
        return item
    return {**item, "text": marker} if item.get("kind") == "note" else None


def export_holds(item: dict, text: str) -> bool:
    return same(item.get("text"), text)


def call_texts(value: object, names: frozenset[str] = CALL_TEXT) -> Iterator[str]:
    """Every argument named in names (CALL_TEXT: written text) of a tool call's arguments, at any
    depth."""
    if isinstance(value, dict):
        for key, v in value.items():
            if key in names and isinstance(v, str):
                yield v
            else:
                yield from call_texts(v, names)
    elif isinstance(value, list):
        for v in value:
            yield from call_texts(v, names)


def call_wrote(role: str | None, row: str) -> Iterator[str]:
    """What a session record's index row says in its own words: its content, or for a call the
    row itself and the text and query it wrote (CALL_WROTE; not an old, which names another's
    entry). A forget of the record takes these (taken.py)."""
    yield row
    if role != "call":
        return
    _, _, arguments = row.partition(" ")
    try:
        yield from call_texts(json.loads(arguments), CALL_WROTE)
    except (ValueError, RecursionError):
        # cut short by the index's cap (or nested past what the parser takes): the arguments
        # written whole in it
        yield from (t for n, t in _cut_call_arguments(arguments) if n in CALL_WROTE)


# A CALL_TEXT argument whose whole JSON string stands in a call's arguments, even when the index
# cut the arguments short so that they no longer parse.
_QUOTED_ARGUMENT = re.compile(r'"(' + "|".join(sorted(CALL_TEXT)) + r')"\s*:\s*("(?:[^"\\]|\\.)*")')


def _cut_call_arguments(arguments: str) -> Iterator[tuple[str, str]]:
    """(name, value) of the CALL_TEXT arguments written whole in a call's arguments cut short."""
    for name, quoted in _QUOTED_ARGUMENT.findall(arguments):
        try:
            value = json.loads(quoted)
        except ValueError:
            continue
        if isinstance(value, str):
            yield name, value


def _cut_call_texts(arguments: str) -> Iterator[str]:
    """The CALL_TEXT arguments written whole in a call's arguments cut short."""
    return (value for _, value in _cut_call_arguments(arguments))


def row_texts(role: str | None, row: str) -> Iterator[str]:
    """What an index row (a session record's row, or a note's) carries as written: its content;
    for a call, the row itself ("name arguments", as search shows it and forget of its record
    takes it) and its CALL_TEXT arguments (those written whole, when the index cut the call
    short), each of which memoryd may hold elsewhere alone (a recall's query in the recall log)."""
    yield row
    if role != "call":
        return
    _, _, arguments = row.partition(" ")
    try:
        yield from call_texts(json.loads(arguments))
    except (ValueError, RecursionError):
        # cut short by the index's cap (or nested past what the parser takes): the arguments
        # written whole in it
        yield from _cut_call_texts(arguments)


def holds_forgotten(
    role: str | None, row: str, digests: frozenset[str], cap: int | None = None
) -> bool:
    """True when an index row holds, as row_holds judges, a text whose digest is in digests, or
    is a forgotten text as another [index] max_record_bytes cuts it (forgetcuts.py; cap: the one
    in force, which cut the row when it is that long): the indexer leaves it out, so a text the
    owner made memoryd forget never comes back from a log the forget could not read then (or one
    a restore lays later), nor after the owner changed the cap."""
    texts = list(row_texts(role, row))
    if any(text_listed(text, digests) for text in texts):
        return True
    cut = cap is not None and len(row.encode("utf-8", "surrogatepass")) >= cap - 3
    # The row, and each argument a call wrote (whole, so not cut: the cap cuts only the last)
    if any(forgetcuts.listed(text, digests, text is row and cut) for text in texts):
        return True
    if cut and role == "call":
        return any(forgetcuts.listed(text, digests, True) for text in _open_arguments(row))
    return False


# A CALL_TEXT argument the cap cut: its JSON string opened, never closed, to the row's end.
_OPEN_ARGUMENT = re.compile(
    r'"(?:' + "|".join(sorted(CALL_TEXT)) + r')"\s*:\s*"((?:[^"\\]|\\.)*\\?)\Z'
)


def _open_arguments(row: str) -> Iterator[str]:
    """The CALL_TEXT argument a call's row cut by the cap ends in, as far as it goes (less an
    escape cut in two: \\u and up to three of its digits)."""
    _, _, arguments = row.partition(" ")
    found = _OPEN_ARGUMENT.search(arguments)
    if found is None:
        return
    body = found.group(1)
    for less in range(6):
        try:
            value = json.loads('"' + body[: len(body) - less] + '"')
        except ValueError:
            continue
        if isinstance(value, str):
            yield value
        return


def row_holds(role: str | None, row: str, text: str) -> bool:
    """True when an index row holds text: a call whose arguments carry it, or content that is
    it (row_texts)."""
    return any(same(value, text) for value in row_texts(role, row))
