"""The owner's commands: command word -> (read or write, function), and the guard on every answer.

service.py's _admin looks a command up here, runs a read on a reader thread and a write on the
writer thread (then indexes notes.md), and answers with the text. Each function takes the service
and the checked arg (args.py) and returns the answer: text, or one JSON document when the arg says
"json": true. No answer leaves longer than paging.REPLY_MAX: a longer one is refused, saying so.

A file or folder the command needs that cannot be read or written as it stands (memory/edits
replaced by a file, a month file memoryd may not read) is a state of the disk, not a bug: the
command answers it in one line naming the path and what is wrong, logged in one line, never as
"internal error" with a traceback. A link or FIFO there already says so in its own words
(NotRegular). So is a command that ran out of memory: one line saying so.
"""

import dataclasses
import datetime as dt
import errno
import logging
from collections.abc import Callable
from typing import Literal

from memoryd.errors import AdminRefused
from memoryd.journal import scan as journalscan
from memoryd.owner import blockview, fileedit, history, paging, promote, search, show, stats
from memoryd.owner import datacommands as data_commands
from memoryd.owner.args import Arg, parse
from proto.errors import ProtoError

log = logging.getLogger(__name__)

Kind = Literal["read", "write"]


def _log(service, arg) -> str:
    return history.log_answer(service.store.journal, arg)


def _pending(service, arg) -> str:
    store = service.store
    said = _pending_said(store, arg.json_)
    return history.pending_answer(store.review.items(), store.review_on, arg, said)


def _pending_said(store, as_json: bool) -> history.PendingSaid:
    """What pending says beside its list: the damaged lines of pending.jsonl, and the staged
    writes whose lines left it, in words for the text and as fields for the JSON."""
    review = store.review
    said = history.PendingSaid(review.path, review.damaged())
    if not as_json:
        return dataclasses.replace(said, lost_sentence=review.lost_sentence())
    return dataclasses.replace(
        said,
        lost=review.lost(),
        lost_on_floor=review.lost_on_floor(),
        floor=store.journal.issued.floor,
        taken=review.taken(),
    )


def _owner_write(method: str) -> Callable:
    """undo, accept and reject: the store's sentence, or as JSON with the edit it made."""

    def run(service, arg) -> str:
        sentence = getattr(service.store, method)(arg.id)
        if not arg.json_:
            return sentence
        last = journalscan.tail(service.store.journal.month_files(), 1)
        return paging.dumps({"edit": last[0].id if last else None, "message": sentence})

    return run


COMMANDS: dict[str, tuple[Kind, Callable]] = {
    "log": ("read", _log),
    "pending": ("read", _pending),
    "show": ("read", lambda s, a: show.answer(s.store.journal, a.id, a.json_)),
    "block": ("read", lambda s, a: blockview.answer(s.store, a.json_)),
    "search": ("read", lambda s, a: search.answer(s.recaller, a.query, a.k, a.json_)),
    "stats": (
        "read",
        lambda s, a: stats.answer(
            s.store.home, a.days, dt.datetime.now(dt.UTC), a.json_, s.index, for_owner=a.shown
        ),
    ),
    "file": ("read", lambda s, a: fileedit.file_answer(s.store, a)),
    "undo": ("write", _owner_write("undo")),
    "accept": ("write", _owner_write("accept")),
    "reject": ("write", _owner_write("reject")),
    "promote": ("write", lambda s, a: promote.run(s.store, s.index, a)),
    "edit": ("write", lambda s, a: fileedit.run(s.store, a)),
}

# The owner's data (owner/datacommands.py): backup, restore and forget run as reads and take
# the writer only for their own step; export reads; import writes.
COMMANDS.update(data_commands.TABLE)


def lookup(command: str, arg: str) -> tuple[Kind, Callable]:
    """(read or write, a function of the service giving the bounded answer); AdminRefused for an
    unknown command or a bad arg."""
    entry = COMMANDS.get(command)
    if entry is None:
        raise AdminRefused(f"refused: {command[:32]!r} is not an owner command")
    kind, fn = entry
    checked: Arg = parse(command, arg)

    def run(service) -> str:
        try:
            return guard(fn(service, checked))
        except ProtoError:
            raise  # NotRegular, TooLarge: one line of their own, naming the path
        except MemoryError:
            raise out_of_memory(command) from None
        except OSError as error:
            if error.errno == errno.ENOMEM:  # no file to mend: memory, as above
                raise out_of_memory(command) from None
            raise disk_refusal(command, error) from None

    return kind, run


def out_of_memory(command: str) -> AdminRefused:
    """The one-line answer (and log line) of a command that ran out of memory (memoryd's limit,
    or the machine's): a state of the machine, not a bug, so no traceback."""
    log.error("memory %s: stopped: memoryd ran out of memory", command)
    return AdminRefused(
        f"memory {command} stopped: memoryd ran out of memory; ask again once it is less busy, "
        "or restart memoryd if it keeps failing"
    )


def disk_refusal(command: str, error: OSError) -> AdminRefused:
    """The one-line answer (and log line) of a command stopped by a file or folder it needs."""
    where = error.filename or "a file of memoryd's"
    why = error.strerror or str(error)
    log.warning("memory %s: stopped: %s: %s", command, where, why)
    return AdminRefused(f"memory {command} stopped: {where}: {why}; mend that, then ask again")


def guard(text: str) -> str:
    text = paging.sendable(text)
    size = paging.utf8_len(text)
    if size > paging.REPLY_MAX:
        raise AdminRefused(
            f"refused: the answer is {size:,} bytes, over the {paging.REPLY_MAX:,} one reply may "
            "hold; it was not sent"
        )
    return text
