"""Room in a session log, and the lines that stand for a result it cannot take.

How many bytes the log can still take (the file size limit loopd-shim runs under, the free room
on its disk), the longest line that may stand for one call's result (reserve), and the texts of
those lines and of what the turn is told (turnlog.py writes them, and says why).
"""

import errno
import functools
import os
import resource
from dataclasses import dataclass
from pathlib import Path

from loopd_shim.broker import FAILURE_LABEL
from proto.messages import ToolCall, ToolResultOut
from proto.records import Record, ToolResultRecord, now_rfc3339, record_json

# A reason is an errno's text or a room left; cut so the line reserved for it is bounded.
REASON_CHARS = 120
UNRECORDED = (
    "[the call ran ({ok}, {size:,} bytes of output), but the session log could not take its "
    "result: {reason}]"
)
NOT_RUN = (
    "not run: the session log has no room left for its result ({reason}); nothing was done "
    "(free some room, or go on in a new session)"
)
NOT_LOGGED = (
    "[the session log could not record this result ({reason}): the call ran and this is its "
    "answer; the log holds {held}]\n"
)
HELD_LINE = "a line saying it ran"
HELD_LATER = "nothing of it yet (a line saying it ran is written before the session's next record)"


@dataclass(frozen=True)
class Room:
    """How many bytes the log can still take, and what bounds it."""

    left: int
    where: str

    def reason(self) -> str:
        return f"{max(self.left, 0):,} bytes left {self.where}"


def room(path: Path) -> Room | None:
    """What the log can still take under the file size limit loopd-shim runs with and on its
    disk (less a block, which an append may need whole); None when neither can be told."""
    try:
        size = os.lstat(path).st_size
    except FileNotFoundError:
        size = 0
    except OSError:
        return None
    found: list[Room] = []
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit != resource.RLIM_INFINITY:
        found.append(Room(limit - size, "under the file size limit"))
    try:
        disk = os.statvfs(path.parent)
    except OSError:
        disk = None
    if disk is not None:
        blocks = disk.f_bfree if os.geteuid() == 0 else disk.f_bavail
        found.append(Room((blocks - 1) * disk.f_frsize, "on the disk"))
    return min(found, key=lambda r: r.left, default=None)


def line_bytes(record: Record) -> int:
    return len((record_json(record) + "\n").encode("utf-8"))


def reason_of(e: BaseException) -> str:
    """An append's failure as the few words its record and reply carry."""
    if isinstance(e, OSError):
        text = e.strerror or errno.errorcode.get(e.errno or 0, "") or str(e)
    else:
        text = str(e)
    return text.encode("ascii", "replace").decode("ascii")[:REASON_CHARS]


def unrecorded(result: ToolResultOut, reason: str) -> ToolResultRecord:
    """The line logged for a result the log could not take: that the call ran, and its label."""
    output = UNRECORDED.format(
        ok="ok" if result.ok else "refused",
        size=len(result.output.encode("utf-8")),
        reason=reason[:REASON_CHARS],
    )
    return record_of(result.model_copy(update={"output": output}))


def not_run(call: ToolCall, reason: str) -> ToolResultOut:
    """The answer to a call left unrun because the log could not take its result."""
    return ToolResultOut(
        call_id=call.id,
        name=call.name,
        ok=False,
        output=NOT_RUN.format(reason=reason[:REASON_CHARS]),
        label=FAILURE_LABEL,
    )


def told(result: ToolResultOut, reason: str, held_later: bool) -> ToolResultOut:
    """result as the turn gets it when the log does not hold it: a first line saying so."""
    held = HELD_LATER if held_later else HELD_LINE
    line = NOT_LOGGED.format(reason=reason, held=held)
    return result.model_copy(update={"output": line + result.output})


def reserve(call: ToolCall) -> int:
    """The bytes of the longest line that may stand for call's result in the log: that it ran
    and the log could not take its result, or that it was not run."""
    return _reserve(call.id, call.name)


# A turn asks for the reserve of each call after the one it runs, once per call.
@functools.lru_cache(maxsize=4096)
def _reserve(call_id: str, name: str) -> int:
    worst = "x" * REASON_CHARS
    line = ToolResultRecord(
        time=now_rfc3339(),
        call_id=call_id,
        name=name,
        output="",
        klass="private",
        untrusted=False,
    )
    texts = (
        UNRECORDED.format(ok="refused", size=10**15, reason=worst),
        NOT_RUN.format(reason=worst),
    )
    return max(line_bytes(line.model_copy(update={"output": text})) for text in texts)


def short_of(path: Path, needed: int) -> Room | None:
    """The room the log has when it is less than needed bytes, else None."""
    found = room(path)
    if found is None or found.left >= needed:
        return None
    return found


def record_of(result: ToolResultOut) -> ToolResultRecord:
    """A tool result as its log record, with its label."""
    return ToolResultRecord(
        time=now_rfc3339(),
        call_id=result.call_id,
        name=result.name,
        output=result.output,
        klass=result.label.klass,
        untrusted=result.label.untrusted,
    )
