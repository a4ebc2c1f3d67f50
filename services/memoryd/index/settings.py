"""What decides the rows an index holds besides the logs: its settings and their stamp, and the
cap on what one record may index.

An index records the settings it was built with in its settings table; index.py rebuilds an index
whose stamp differs from the configuration (lowering max_class must not leave rows above it).
"""

import json
import sqlite3
from dataclasses import dataclass

# Bump when what a record indexes to changes, so that older indexes are rebuilt (and an older
# memoryd, going back, rebuilds a newer one rather than misreading it); a step that changes only
# tables derived from the index's own rows goes in formatstep.STEPS, which keeps such an index
# and builds those tables again from its rows. 3: a deleted turn's text
# is no longer kept in its neighbours' rows (context, hybrid), nor a live note left out for a
# forgotten note's number once a hand edit moved it there; an index of 2 may hold either. 4: the
# agent's own recall and memory calls are no longer in the neighbour column of the turns beside
# them (context, hybrid); an index of 3 holds their words there. 5: context's table holds runs of
# scripts written without spaces as their bigrams (context, hybrid); an index of 4 holds them whole.
FORMAT = 5
# What one row may index of its text, by default (config [index] max_record_bytes).
RECORD_BYTES = 65_536


@dataclass(frozen=True)
class Settings:
    """What decides the rows an index holds, besides the logs themselves."""

    max_class: str = "private"
    max_record_bytes: int = RECORD_BYTES

    def stamp(self) -> dict[str, str]:
        return {
            "format": str(FORMAT),
            "max_class": self.max_class,
            "max_record_bytes": str(self.max_record_bytes),
        }


def write_stamp(conn: sqlite3.Connection, settings: Settings) -> None:
    for name, value in settings.stamp().items():
        conn.execute("INSERT OR REPLACE INTO settings VALUES (?, ?)", (name, value))


def read_stamp(conn: sqlite3.Connection) -> dict[str, str] | None:
    """The settings an index was built with, or None when it does not say."""
    try:
        return dict(conn.execute("SELECT name, value FROM settings"))
    except sqlite3.OperationalError:
        return None


def describe_stamp(stamp: dict[str, str] | None) -> str:
    if not stamp:
        return "unknown settings"
    return json.dumps(stamp, sort_keys=True, separators=(",", "="))[1:-1].replace('"', "")


def cap_text(text: str, max_bytes: int) -> str | None:
    """The first max_bytes of text's UTF-8, cut on a character; None when it fits whole."""
    if len(text) * 4 <= max_bytes or len(text.encode("utf-8")) <= max_bytes:
        return None
    return text.encode("utf-8")[:max_bytes].decode("utf-8", "ignore")
