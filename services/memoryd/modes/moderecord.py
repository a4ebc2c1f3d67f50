"""What an index records about its recall mode, read by the build, the parts and the hooks alike.

The recall_mode table names the mode the index was built for; FILL, while it stands, says how far
a build a part at a time got; the tables a switch set aside carry ASIDE, a number and their old
name. Kept apart so that the hooks (modehooks) and the removal of what was set aside (setaside)
read them without the package's build, which imports both.
"""

import sqlite3

from memoryd.modes import registry

MODE_TABLE = "CREATE TABLE recall_mode (mode TEXT, generation INTEGER)"
# While a changed mode's tables are built a part at a time: the last rowid given to the mode, how
# many rows were, how many the index held when the build began, and what the index was before
# (for the log line). While it stands the mode's tables are not whole.
FILL = "recall_mode_fill"
FILL_TABLE = f"CREATE TABLE {FILL} (last INTEGER, done INTEGER, total INTEGER, since TEXT)"
# The old mode's tables, renamed aside by the first part of a build (ASIDE, a number, _, the old
# name) and emptied by the next parts a bounded batch at a time, each dropped once empty. Their
# names are no mode's: they never serve recall.
ASIDE = "recall_mode_old"


def exists(conn: sqlite3.Connection, name: str) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone()
    return found is not None


def recorded(conn: sqlite3.Connection) -> str:
    """The mode the index was built for: spec when it has no recall_mode table."""
    if not exists(conn, "recall_mode"):
        return "spec"
    row = conn.execute("SELECT mode FROM recall_mode").fetchone()
    return "?" if row is None else str(row[0])


def recorded_mode(conn: sqlite3.Connection) -> registry.Mode | None:
    """The recorded mode, None for spec or a name no mode has (its tables are not kept)."""
    name = recorded(conn)
    if name == "spec" or name not in registry.names():
        return None
    return registry.get(name)


def objects(mode: registry.Mode) -> tuple[str, ...]:
    return () if not mode.objects else ("recall_mode", *mode.objects)


def whole(conn: sqlite3.Connection, mode: registry.Mode) -> bool:
    return all(exists(conn, name) for name in objects(mode))


def filling(conn: sqlite3.Connection) -> tuple[int, int, int] | None:
    """While the mode's tables are built a part at a time (prepare_part): the last rowid given
    to the mode, the rows given, and about how many there are (those held when it began); None
    when they are not."""
    if not exists(conn, FILL):
        return None
    row = conn.execute(f"SELECT last, done, total FROM {FILL}").fetchone()  # noqa: S608
    if row is None:  # an emptied record: the parts start over, from the first row
        return (0, 0, 0)
    return (int(row[0] or 0), int(row[1] or 0), int(row[2] or 0))


def aside(conn: sqlite3.Connection) -> list[str]:
    """The tables set aside (setaside.set_aside) and not removed yet."""
    rows = conn.execute(
        "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name GLOB ? ORDER BY name",
        (f"{ASIDE}[0-9]*_*",),
    )
    return [str(name) for (name,) in rows]


def aside_number(name: str) -> int:
    """The number a table set aside carries after ASIDE (0 when it carries none)."""
    digits = name[len(ASIDE) :].split("_", 1)[0]
    return int(digits) if digits.isdigit() else 0
