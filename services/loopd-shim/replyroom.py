"""What one turn's reply keeps of its tool results while the turn runs.

The reply to an assistant_message must fit one frame, or the driver would be told the turn failed
when every call in it ran: what is left of MAX_FRAME after a margin for each result's other fields
goes to the outputs, and an output over its share is cut, saying so (the session log keeps every
result whole, written as it arrives). The shares are known only once the turn ends, but keeping
every output whole until then would hold their sum (800 fetched pages of 500 KB: 400 MB, past the
shim's 256 MiB). So TurnReply keeps each output only up to the level the outputs so far would be
cut to: more outputs can only lower that level, never raise it, so what is dropped early is never
needed later, and the turn holds at most about twice the reply's room whatever its results weigh.
"""

import logging

from proto.frames import MAX_FRAME
from proto.messages import ToolResultOut

FRAME_MARGIN = 64 * 1024
RESULT_MARGIN = 1024
CUT = "\n[cut here for the reply: {size:,} bytes in all; the session log holds the whole result]"
# A result the session log could not take (logroom.py): what is cut is kept nowhere.
CUT_UNLOGGED = "\n[cut here for the reply: {size:,} bytes in all; the rest is kept nowhere]"

log = logging.getLogger("loopd_shim.service")


def share_of(sizes: list[int], room: int) -> int | None:
    """The bytes each output over it is cut to so that outputs of sizes fit room, the small ones
    whole and the room left shared evenly among the large ones; None when all fit whole."""
    if sum(sizes) <= room:
        return None
    share, left, waiting = 0, max(room, 0), len(sizes)
    for size in sorted(sizes):
        share = left // waiting
        if size > share:
            break
        left, waiting = left - size, waiting - 1
    return share


def _prefix(output: str, limit: int) -> str:
    return output.encode("utf-8")[:limit].decode("utf-8", errors="ignore")


class TurnReply:
    """The results of one turn of calls tool calls, as its reply will carry them."""

    def __init__(self, session: str, calls: int):
        self.session = session
        self.room = max(MAX_FRAME - FRAME_MARGIN - RESULT_MARGIN * calls, 0)
        self._results: list[ToolResultOut] = []  # outputs kept up to self._level bytes
        self._sizes: list[int] = []  # each output's whole size, in bytes of UTF-8
        self._kept: list[int] = []  # the bytes kept of each
        self._logged: list[bool] = []  # whether the session log holds each whole
        self._kept_total = 0
        self._level: int | None = None  # no output is kept beyond this many bytes

    def add(self, result: ToolResultOut, logged: bool = True) -> None:
        """Keep result, its output cut to the level; the whole one is the session log's, when
        logged (else it is lost beyond what the reply carries, and the cut says so)."""
        size = len(result.output.encode("utf-8"))
        if self._level is not None and size > self._level:
            result = result.model_copy(update={"output": _prefix(result.output, self._level)})
        kept = size if self._level is None else min(size, self._level)
        self._results.append(result)
        self._sizes.append(size)
        self._kept.append(kept)
        self._logged.append(logged)
        self._kept_total += kept
        if self._kept_total > 2 * self.room:
            self._lower()

    def _lower(self) -> None:
        """Cut what is kept to the share the outputs so far would get: the final share is at
        most that, so the reply is the same as if every output had been kept whole."""
        level = share_of(self._sizes, self.room)
        if level is None:
            return
        self._level = level
        for index, kept in enumerate(self._kept):
            if kept > level:
                result = self._results[index]
                self._results[index] = result.model_copy(
                    update={"output": _prefix(result.output, level)}
                )
                self._kept_total -= kept - level
                self._kept[index] = level

    def results(self) -> list[ToolResultOut]:
        """The reply's results: each output over its share cut to it, saying so."""
        share = share_of(self._sizes, self.room)
        if share is None:
            return list(self._results)
        out = []
        for result, size, logged in zip(self._results, self._sizes, self._logged, strict=True):
            if size <= share:
                out.append(result)
                continue
            note = (CUT if logged else CUT_UNLOGGED).format(size=size)
            text = _prefix(result.output, max(share - len(note.encode("utf-8")), 0))
            out.append(result.model_copy(update={"output": text + note}))
        log.info(
            "session %s: %d tool results cut for the reply (%s bytes together); the log holds them",
            self.session,
            sum(1 for size in self._sizes if size > share),
            f"{sum(self._sizes):,}",
        )
        return out


def fitted(session: str, results: list[ToolResultOut]) -> list[ToolResultOut]:
    """results, each output cut to its share when together they would not fit one frame."""
    reply = TurnReply(session, len(results))
    for result in results:
        reply.add(result)
    return reply.results()
