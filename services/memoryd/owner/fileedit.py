"""bxctl memory edit memory|user: the owner's editor on a copy, checked whole.

`file` hands bxctl the file's text and base, the SHA-256 of its bytes. `edit` takes the text back
with that base: if the file changed in between, it is refused (nothing is overwritten); otherwise
the whole text is checked, entry by entry, rule by rule, for duplicates and against the limit, and
every problem is listed, or it is applied as one journalled edit (session "owner", action "edit").
Entries the owner removed are kept by the journal line's before, not sent to notes.md.

The file is read as every memory file is: never through a symbolic link, never waiting on a FIFO,
only a regular file, and at most READ_MAX bytes (a longer one could not travel back in one edit).
"""

import errno
import hashlib
import os

from memoryd.errors import AdminRefused, FileDamaged
from memoryd.memory import check, edits, entries
from memoryd.memory.entries import FILE_OF_ARG, LIMITS
from memoryd.owner import paging
from memoryd.owner.args import EditArg, FileArg
from memoryd.owner.datalock import refuse_while_forget_stopped
from memoryd.trust.caller import OWNER
from proto.files import NotRegular, open_file, read_at_most
from proto.messages import ADMIN_ARG_MAX
from proto.plural import counted

PROBLEMS_SHOWN = 50
# What one edit can carry back; a file longer than that is trimmed by hand, not through bxctl.
READ_MAX = ADMIN_ARG_MAX


def read_bounded(path, name: str) -> bytes:
    """The file's bytes: a regular file only (a link, a FIFO or a device is refused without being
    followed, waited on or read), at most READ_MAX bytes; AdminRefused in one line otherwise."""
    try:
        fd = open_file(path, os.O_RDONLY)
        try:
            data = read_at_most(fd, READ_MAX + 1)
        finally:
            os.close(fd)
    except NotRegular as e:
        raise AdminRefused(f"refused: {name} is {e.strerror}; nothing was read") from None
    except OSError as e:
        why = "missing" if e.errno == errno.ENOENT else f"unreadable ({e.strerror or e})"
        raise AdminRefused(f"refused: {name} is {why}; nothing was read") from None
    if len(data) > READ_MAX:
        raise AdminRefused(
            f"refused: {name} is larger than {READ_MAX:,} bytes, more than an edit can carry; "
            "trim it in the file itself"
        )
    return data


def base_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_answer(store, arg: FileArg) -> str:
    """Always JSON: bxctl needs the base to send back."""
    name = FILE_OF_ARG[arg.file]
    data = read_bounded(store.home.memory_file(name), name)
    try:
        text = entries.decode(data, name)
    except FileDamaged as e:
        raise AdminRefused(f"refused: {name} cannot be read for editing: {e}") from None
    return paging.dumps({"file": name, "text": text, "base": base_of(data)})


def problems(name: str, text: str) -> tuple[list[str], list[str]]:
    """The entries of text, and every problem with them (empty when it can be applied).

    text is what the owner's editor saved, so it is read as a hand-edited file is (a byte order
    mark dropped, CRLF and CR read as LF): the same bytes give the same entries in the copy as in
    the file itself, and neither is taken for a character the owner wrote. An entry repeats
    another when the two are canonically equal (entries.canonical), as an agent's add is refused."""
    found = entries.parse(entries.as_saved(text))
    out: list[str] = []
    first: dict[str, int] = {}
    for number, entry in enumerate(found, start=1):
        reason = entries.entry_problem(entry) or check.problem(entry)
        if reason is not None:
            out.append(f"entry {number} ({entries.shorten(entry, 40)!r}): {reason}")
        key = entries.canonical(entry)
        if key in first:
            out.append(f"entry {number} repeats entry {first[key]}")
        first.setdefault(key, number)
    length = entries.length(found)
    if length > LIMITS[name]:
        out.append(f"{name} would be {length:,} of {LIMITS[name]:,} characters (the limit)")
    return found, out


def refusal(name: str, found: list[str]) -> str:
    shown = found[:PROBLEMS_SHOWN]
    more = f"\n  and {len(found) - PROBLEMS_SHOWN:,} more" if len(found) > PROBLEMS_SHOWN else ""
    lines = "\n".join(f"  {p}" for p in shown)
    said = counted(len(found), "problem")
    return f"refused: {name} was not changed; {said}:\n{lines}{more}"


def run(store, arg: EditArg) -> str:
    # A copy made before a forget that stopped part way may hold the text it takes.
    refuse_while_forget_stopped(store.home, "edited")
    name = FILE_OF_ARG[arg.file]
    new_entries, found = problems(name, arg.text)
    if found:
        raise AdminRefused(refusal(name, found))

    def decide(current: list[str]) -> edits.Plan:
        data = read_bounded(store.home.memory_file(name), name)
        if base_of(data) != arg.base:
            raise AdminRefused(
                f"refused: {name} changed since the copy was made (by a session or by hand); "
                "nothing was overwritten"
            )
        return edits.Plan("edit", name, tuple(current), tuple(new_entries))

    record = store.owner_edit(name, decide, OWNER, "edit")
    if record is None:
        sentence = f"{name} is unchanged: the copy holds the same entries"
    else:
        sentence = f"edit {record.id}: " + edits.updated_sentence(name, entries.length(new_entries))
    if arg.json_:
        return paging.dumps({"edit": record and record.id, "file": name, "message": sentence})
    return sentence
