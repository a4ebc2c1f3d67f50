"""Class is taint too (design 8): what a session above [index] max_class may do to identity.

Identity (memory.md, user.md) goes into every prompt, so it must never hold what a session above
max_class has read. Such a session is routed as a session that read untrusted content is: its add
becomes a note labelled with its class (the index leaves notes above max_class out), and replace,
remove and consolidate are refused. A pending edit staged by such a session cannot be accepted.

An entry that leaves memory.md or user.md (moved, dropped) keeps the class of the session that
wrote it in: entry_classes walks the journal back from its end to the last edit that brought the
entry into the file. An undo only restores what an earlier edit wrote, so the walk goes past it; an
entry no journal line brought in (the owner's hand edit) is the owner's: private.
"""

from memoryd.journal.journal import EditLine, Journal
from memoryd.journal.linefile import read_lines
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


def _brought_in(record: EditLine, text: str) -> bool:
    return text in record.after and text not in record.before and record.action != "undo"


def entry_classes(journal: Journal, file: str, texts: list[str]) -> dict[str, str]:
    """The class of each entry of file in texts: that of the edit that last brought it in.

    Reads the journal's months newest first and stops as soon as every text is placed, so an
    edit of recent entries reads only the current month.
    """
    found: dict[str, str] = {}
    wanted = set(texts)
    for path in reversed(journal.month_files()):
        for record in reversed(read_lines(path, EditLine)):
            if record.to != file:
                continue
            for text in wanted - found.keys():
                if _brought_in(record, text):
                    found[text] = session_class(record.taint)
            if found.keys() >= wanted:
                return found
    return {text: found.get(text, FLOOR) for text in texts}
