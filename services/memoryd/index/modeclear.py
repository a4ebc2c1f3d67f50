"""A switch of the recall mode to spec, made a part at a time once memoryd listens (ModePrep's).

spec has no tables of its own: the switch only drops the old mode's. In one writer job that DROP
zeroes every page they held (secure_delete): seconds at 150,000 records, about a minute at a
million from hybrid, every memory write sent meanwhile answered "not applied" at write_deadline.
So it is made as a changed mode's build is (modes.drop_part): the first part sets the old tables
aside, the recall_mode record dropped (the index is spec's at once: its recall, the spec's
search, is whole, and says nothing), and each next part deletes a bounded batch of them, each a
writer job of its own. A stop or a kill between parts keeps what is set aside: the next start
(or a switch to another mode) goes on from it.
"""

import logging
import sqlite3
from typing import Any

from memoryd import modes
from memoryd.errors import IndexDamaged
from proto.plural import counted

# The ModePrep whose parts these are: typed loosely, since modeprep.py imports this module and
# a module that only serves it should not import it back.
ModePrep = Any

# Logged under the index's name, as the rest of the mode's preparation is.
log = logging.getLogger("memoryd.index.index")


def defer(prep: ModePrep, conn: sqlite3.Connection) -> None:
    """defer_mode for spec: the old mode's tables are dropped a part at a time once memoryd
    listens (part); recall is the spec's from now, whole (its tables are)."""
    prep._clearing = modes.recorded(conn)
    prep._mode_state = "pending"
    prep._live = prep.recall_mode.open(prep._embedding_connection, prep.path)
    log.info(
        "index %s: recall mode %s (was %s): the old mode's tables are dropped a part at a"
        " time once memoryd listens; recall answers by the spec's search, whole, meanwhile",
        prep.path,
        prep.mode,
        prep._clearing,
    )


def part(prep: ModePrep) -> bool:
    """prepare_mode_part for a switch to spec: one part of the old mode's tables' removal
    (modes.drop_part), a writer job of its own; True once none is left (or it failed, waits
    for room, or memoryd is stopping), the state then as prepare_mode leaves it."""
    with prep._pool_lock:
        state = prep._mode_state
        if state in ("stopped", None):
            return True
        prep._mode_state = "preparing"
    try:
        made = prep._in_one_transaction(modes.drop_part, True)
    except (sqlite3.Error, IndexDamaged) as error:
        prep._not_built(error, state == "waiting")
        return True
    was = prep._clearing
    if made is not None and made[0] != "spec":
        log.info(
            "index %s: recall mode %s (was %s): its tables set aside (%s), dropped a part"
            " at a time",
            prep.path,
            prep.mode,
            made[0],
            counted(made[1], "table"),
        )
    with prep._pool_lock:
        stopped = prep._mode_state == "stopped"
        if not stopped:
            prep._mode_state = "pending" if made is not None else None
    if stopped:
        if made is not None:
            log.info(
                "index %s: recall mode %s: memoryd stopping; the next start drops the %s"
                " left set aside",
                prep.path,
                prep.mode,
                counted(made[1], "table"),
            )
        return True
    if made is None:
        prep._clearing = None
        prep._fresh_file = False
        if prep._parts_made:
            since = "" if was == "spec" else f" (was {was})"
            log.info("index %s: recall mode %s%s: its tables dropped", prep.path, prep.mode, since)
    else:
        prep._parts_made += 1
    return made is None
