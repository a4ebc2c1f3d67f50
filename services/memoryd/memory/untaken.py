"""A write that failed and could not be taken back either (the disk that refused its journal line
refused the take-back too, as ext4 turned read-only does): its file holds the change, yet its
caller is answered "not applied". What that answer says, and how the write's intent is marked so
that the start or write that finds the change journals it as not taken back (NOT_TAKEN_BACK, the
asked action kept as requested), never as the write answered applied. store.py decides when.
"""

import json
from pathlib import Path

from memoryd.home import Home, atomic_write
from memoryd.memory import handedit, writeintent
from memoryd.memory.memfiles import holds

# The action a write's line is journalled with when it failed and could not be taken back: the
# file holds it, yet its caller was answered "not applied". Its own action is kept as requested.
NOT_TAKEN_BACK = handedit.NOT_TAKEN_BACK
RUNBOOK = "runbook: journal-damaged"
# The files whose take-back an answer speaks of; a journal line left by a failed append is the
# journal's own (journal-damaged), and the file it is about is unchanged.
TAKEN_BACK = ("memory.md", "user.md", "notes.md", "pending.jsonl")


def holds_now(path: Path, after: tuple[str, ...]) -> bool:
    """Whether path holds the entries after now (False when it cannot be read)."""
    try:
        return holds(path, after)
    except OSError:
        return False


def untaken_fields(fields: dict) -> dict:
    """A write's journal fields as the line of a change that could not be taken back says it:
    action not-taken-back, the action asked for kept as requested (an accept's already is)."""
    return {
        **fields,
        "action": NOT_TAKEN_BACK,
        "requested": fields.get("requested") or fields.get("action"),
    }


def write_mark(home: Home, fields: dict, notes_at: tuple[int, str] | None) -> None:
    """Replace the write's intent with its marked one, as writeintent.intend writes one but whole
    or not at all: a mark torn by the disk that failed the write would lose the intent, and
    the change be journalled as the owner's hand edit."""
    value: dict = {"fields": untaken_fields(fields)}
    if notes_at is not None:
        value["notes_at"], value["block"] = notes_at
    atomic_write(
        writeintent.intent_path(home), json.dumps(value, ensure_ascii=False).encode("utf-8")
    )


def head(reason: str, where: str) -> str:
    """The start of every answer to a write that failed and could not be taken back."""
    return (
        f"not applied: memoryd cannot write its memory files ({reason}), and could not take "
        f"the change back: {where} may hold it"
    )


def sentence(reason: str, where: str) -> str:
    """The answer to a write that failed and could not be taken back: where may hold it; what
    happens to it next, which a write whose intent is marked (write_mark) makes true."""
    start = head(reason, where)
    if where == "pending.jsonl":
        return f"{start} as a waiting edit, for the owner to reject ({RUNBOOK})"
    return (
        f"{start} until memoryd can write again, when it journals it as {NOT_TAKEN_BACK} or "
        f"takes it back ({RUNBOOK})"
    )
