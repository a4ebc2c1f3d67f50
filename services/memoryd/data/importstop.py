"""Why an import stops before its end, and what its refusal then says.

An import is applied in batches (importrun.py), each item journalled as it is written, so it can
stop between two of them with everything before it standing: when memoryd stops, and when the
owner's bxctl has gone (Ctrl-C, a timeout: its connection closed, proto/peer.py), for nobody
waits for the answer then and a large file would hold a reader and the writer's turns for as
long as it takes. A dry run stops at the next item, nothing written.
"""

import threading
from typing import Protocol

from proto import peer
from proto.plural import counted

STOPPING = "memoryd is stopping"
CALLER_GONE = "bxctl stopped waiting for it"


class Stop:
    """Why an import stops now (memoryd stopping, its caller gone), or None."""

    def __init__(self, stopping: threading.Event, gone: peer.Probe | None):
        self.stopping, self.gone = stopping, gone

    def why(self) -> str | None:
        if self.stopping.is_set():
            return STOPPING
        if self.gone is not None and self.gone():
            return CALLER_GONE
        return None


class Done(Protocol):
    """What stopped reads of an import's progress (importrun.Progress)."""

    at: int
    applied: int
    skipped: int
    first_edit: str | None
    last_edit: str | None
    stopped: str | None
    untaken: bool


def stopped(done: Done, total: int) -> str:
    """The refusal of an import stopped part way: where, why, and what was imported before."""
    said = f"refused: the import stopped at item {done.at + 1:,} of {total:,} ({done.stopped}); "
    if done.untaken:  # its file may hold it, unjournalled: "nothing was imported" would lie
        said += "that item may stand in its file without a journal line, as said; "
    if done.applied:
        said += (
            f"imported before it: {counted(done.applied, 'item', 'items')} (edits "
            f"{done.first_edit} to {done.last_edit}), {done.skipped:,} skipped; "
        )
    elif done.untaken:
        said += "nothing before it was imported; "
    else:
        said += "nothing was imported; "
    return said + "importing the file again brings the rest (what is there is skipped)"
