"""Class is taint too (design 8): what a session above [index] max_class may do to identity.

Identity (memory.md, user.md) goes into every prompt, so it must never hold what a session above
max_class has read. Such a session is routed as a session that read untrusted content is: its add
becomes a note labelled with its class (the index leaves notes above max_class out), and replace,
remove and consolidate are refused. A pending edit staged by such a session cannot be accepted.

An entry that leaves memory.md or user.md (moved, dropped) keeps the class it came in with: that of
the session whose edit last brought it into the file, or, for a promoted note, the note's own class
(journal.class_source). The journal's index by file (journal/byfile.py) holds it for every entry a
file holds now; an undo only restores what an earlier edit wrote, so it brings nothing in; an entry
no journal line brought in, and the owner's own edits, are the owner's: private.

A session's rewrite never lowers a class: a line of a session's edit that takes entries out of the
file (replace's old, consolidate's rewritten, moved and dropped entries) and brings new ones in
carries the highest class of those it took out when that is above the session's own (carried, the
line's "carried"), since the new text may be made of theirs; and what it moves or drops to notes.md
keeps the higher of its own class and the session's.

The memory block (memory/block.py) leaves out an entry whose class is above max_class as it is
now: the owner may have lowered it since the entry came in, and identity never holds more than
recall may show.
"""

from memoryd.journal.byfile import JournalIndex
from proto.labels import CLASS_RANK, higher_class

FLOOR = "private"


def above(taint: str, max_class: str) -> bool:
    """True when a session of this taint has read more than identity may hold."""
    return CLASS_RANK[taint] > CLASS_RANK[max_class]


def session_class(taint: object) -> str:
    """The class a session's writes carry: its taint, at least private."""
    if isinstance(taint, str) and taint in CLASS_RANK:
        return higher_class(taint, FLOOR)
    return FLOOR


def class_add_sentence(klass: str, max_class: str) -> str:
    return (
        f"saved as a note ({klass}): this session has read {klass} content, above what memory "
        f"may hold ({max_class}). It is kept in notes.md; recall leaves it out and it never "
        "reaches the prompt."
    )


def class_refused_sentence(klass: str, max_class: str, file: str) -> str:
    return (
        f"this session has read {klass} content, above what memory may hold ({max_class}); "
        f"it can take notes but not change {file}."
    )


def accept_refused_sentence(pending_id: str, reason: str) -> str:
    return f"refused: {pending_id} was staged by a session that {reason}; it cannot be accepted"


def promote_refused_sentence(ref: str, klass: str, max_class: str) -> str:
    return (
        f"refused: {ref} is a {klass} note, above what memory may hold ({max_class}); "
        "it stays in notes.md and cannot be promoted"
    )


def entry_classes(index: JournalIndex, file: str, texts: list[str]) -> dict[str, str]:
    """The class of each entry of file in texts: the one it came into the file with."""
    return {text: session_class(source) for text, source in index.came_with(file, texts).items()}


HIGHEST = max(CLASS_RANK, key=CLASS_RANK.__getitem__)


def carried(
    index: JournalIndex, file: str, before: tuple[str, ...], after: tuple[str, ...], taint: object
) -> str | None:
    """The class a session's edit of file from before to after carries over from the entries it
    took out, when it brings entries in and that class is above the session's; else None. An
    OSError when the journal cannot be read."""
    left, came = set(after), set(before)
    gone = [text for text in before if text not in left]
    if not gone or not any(text not in came for text in after):
        return None
    own = session_class(taint)
    klass = own
    for source in index.came_with(file, gone).values():
        klass = higher_class(klass, entry_class(source))
    return klass if klass != own else None


def note_class(entry: str, taint: object | None) -> str:
    """The class of an entry a session's edit moves or drops to notes.md: the higher of the one
    it came in with and the session's (taint None: the owner's edit, the entry's own)."""
    return entry if taint is None else higher_class(entry, session_class(taint))


def entry_class(source: str | None) -> str:
    """The class an entry of identity holds, as export gives it: the one it came in with
    (journal.class_source), the owner's (no line brought it in) private, and a value that is no
    class (a journal edited by hand) the highest, so it is never shown by mistake."""
    if source is None:
        return FLOOR
    return source if source in CLASS_RANK else HIGHEST


def anything_above(max_class: str) -> bool:
    return CLASS_RANK[max_class] < CLASS_RANK[HIGHEST]


def above_max(sources: dict[str, str | None], max_class: str) -> dict[str, str]:
    """Of the entries in sources (text: class source), each whose class is above max_class, with
    that class. Identity reaches every prompt with no label: it never shows what recall would
    not (max_class may have been lowered since the entry came in)."""
    classes = {text: entry_class(source) for text, source in sources.items()}
    return {text: klass for text, klass in classes.items() if above(klass, max_class)}


def block_reason(klass: str, max_class: str) -> str:
    return f"it came in as {klass}, above what memory may hold ({max_class})"
