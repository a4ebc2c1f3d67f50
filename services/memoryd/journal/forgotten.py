"""memory/forgotten.jsonl: the keys of the records the owner made memoryd forget, never their text.

A key is note:N (the Nth entry of notes.md, whose text forget replaced with the marker) or
session:ID:N (record N of a session's log, which is loopd's and keeps its text). The indexer skips
every listed key, so a catch-up, a reindex or a restore never puts the text back into the index.
The marker is the text that replaces what was forgotten wherever memoryd held it: it says who and
when, and holds no hash (a short secret's hash can be guessed).
"""

import json
import os
import re
from pathlib import Path

from memoryd.home import Home, append_line, read_file

MARKER_PREFIX = "[forgotten by the owner on "
KEY = re.compile(r"^(?:note:\d{1,9}|session:[^:\s]{1,128}:\d{1,12})\Z")

FILE = "forgotten.jsonl"


def marker(when: str) -> str:
    """The text standing where forgotten text was; when is a UTC time to the minute."""
    return f"{MARKER_PREFIX}{when}]"


def is_marker(text: object) -> bool:
    return isinstance(text, str) and text.startswith(MARKER_PREFIX) and text.endswith("]")


def path(home: Home) -> Path:
    return home.memory_file(FILE)


def add(home: Home, key: str, when: str, edit: str) -> None:
    append_line(path(home), json.dumps({"key": key, "time": when, "edit": edit}))


_cache: dict[Path, tuple[tuple[int, int, int], frozenset[str]]] = {}
# The home's file is the one read per part; a restore reads its staged copy once, under a name of
# its own each time, so entries beyond a few are dropped rather than kept for every restore.
CACHED_MOST = 4


def keys(home: Home) -> frozenset[str]:
    """Every forgotten key; read again only when the file changed (the indexer asks per part)."""
    where = path(home)
    try:
        st = os.stat(where, follow_symlinks=False)
    except FileNotFoundError:
        return frozenset()
    stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
    cached = _cache.get(where)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    found = set()
    for raw in read_file(where).split(b"\n"):
        try:
            value = json.loads(raw) if raw.strip() else None
        except ValueError:
            continue
        key = value.get("key") if isinstance(value, dict) else None
        if isinstance(key, str) and KEY.match(key):
            found.add(key)
    result = frozenset(found)
    if where not in _cache and len(_cache) >= CACHED_MOST:
        _cache.clear()
    _cache[where] = (stamp, result)
    return result


def session_key(session: str, record: int) -> str:
    return f"session:{session}:{record}"


def note_key(number: int) -> str:
    return f"note:{number}"


NOTE_KINDS = "kind IN ('noted', 'moved', 'dropped')"


def condition(listed: frozenset[str] | set[str]) -> tuple[str, tuple] | None:
    """The index's sources rows of the keys listed, as one WHERE clause with bound values (the
    keys travel as JSON, never in the SQL); None for no keys. A rebuilt index is swapped in only
    after its rows of these keys are gone: a forget during the build may follow the build's read."""
    sessions = sorted(k.removeprefix("session:") for k in listed if k.startswith("session:"))
    numbers = sorted(int(k.removeprefix("note:")) for k in listed if k.startswith("note:"))
    parts, params = [], []
    if sessions:
        parts.append(
            "(kind = 'session' AND session || ':' || record IN (SELECT value FROM json_each(?)))"
        )
        params.append(json.dumps(sessions))
    if numbers:
        parts.append(f"({NOTE_KINDS} AND record IN (SELECT value FROM json_each(?)))")
        params.append(json.dumps(numbers))
    if not parts:
        return None
    return " OR ".join(parts), tuple(params)
