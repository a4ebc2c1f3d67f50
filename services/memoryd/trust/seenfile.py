"""index/witness.json: where the witness had read each session's log to, kept across a restart.

The witness (witness.py) reads a session's log to learn its label before a memory call is routed,
and keeps how far it read (seen.py) so that the next call reads only what the log gained. Kept in
memory alone, that point was lost at every restart: the first memory call of a session open for
days then read its whole log again, hundreds of megabytes, on the call's own deadline. So at a
clean stop the points are written here, and the next start takes them up: a log is read on from
its point when it is still the same file (device and inode) and still holds, just before the
point, the bytes read there (their digest), as a point kept in memory is checked.

A point is only a saving, as in memory: this file lost, damaged, edited or left by an older
memoryd costs one whole read per session, never a label. Each point carries the label read up to
it, and a session's label never gets laxer: the point's label is taken together with the one the
session left in memory/labels.jsonl (risen.py). The file lives in index/, beside the other files
memoryd can rebuild, and holds no text: session ids, numbers and labels.

Format: {"points": [[session, device, inode, offset, tail sha256 hex, class, untrusted], ...]},
at most MOST_POINTS + MOST_SEEN of them; a line of a point that does not have this shape is
passed over, and a file that does not parse is passed over whole, each with one log line.
"""

import json
import logging
import os

from memoryd.home import Home, atomic_write, open_file
from memoryd.trust.seen import MOST_POINTS, MOST_SEEN, Point
from proto import jsonread
from proto.files import read_at_most
from proto.labels import CLASSES
from proto.messages import is_session_id

log = logging.getLogger(__name__)

NAME = "witness.json"
MOST_KEPT = MOST_POINTS + MOST_SEEN
# A point as written is under 200 bytes: a file past this is not one this module wrote.
MOST_BYTES = MOST_KEPT * 256
_LIMIT = 1 << 62  # device, inode and offset: what os.stat can give
_COST = "each session's log is read whole once"


def path(home: Home):
    return home.index_dir / NAME


def load(home: Home) -> dict[str, Point]:
    """The points the file holds, by session; {} when there is no file or it cannot be used."""
    where = path(home)
    try:
        fd = open_file(where, os.O_RDONLY)
    except FileNotFoundError:
        return {}
    except OSError as e:
        log.warning("%s: not read (%s); %s", where, e.strerror or e, _COST)
        return {}
    try:
        data = read_at_most(fd, MOST_BYTES + 1)
    except OSError as e:
        log.warning("%s: not read (%s); %s", where, e.strerror or e, _COST)
        return {}
    finally:
        os.close(fd)
    try:
        if len(data) > MOST_BYTES:
            raise ValueError(f"larger than {MOST_BYTES:,} bytes")
        rows = jsonread.loads(data)["points"]
        if not isinstance(rows, list):
            raise ValueError("points is not a list")
    except (ValueError, KeyError, TypeError) as e:
        log.warning("%s: not used (%s); %s", where, e, _COST)
        return {}
    points: dict[str, Point] = {}
    passed = 0
    for row in rows[:MOST_KEPT]:
        made = _point(row)
        if made is None:
            passed += 1
        else:
            points[made[0]] = made[1]
    if passed:
        log.warning("%s: %d points not of this file's shape passed over", where, passed)
    return points


def save(home: Home, points: list[tuple[str, Point]]) -> None:
    """Write the points (the newest last); a failure is logged and costs only whole reads."""
    where = path(home)
    if not points or not os.path.isdir(home.index_dir):
        return  # a home whose sessions made no memory call has nothing to keep
    rows = [
        [s, p.device, p.inode, p.offset, p.tail.hex(), p.klass, p.untrusted]
        for s, p in points[-MOST_KEPT:]
    ]
    try:
        atomic_write(where, json.dumps({"points": rows}, separators=(",", ":")).encode())
    except OSError as e:
        log.warning("%s: not written (%s); %s", where, e.strerror or e, _COST)


def _point(row: object) -> tuple[str, Point] | None:
    if not (isinstance(row, list) and len(row) == 7):
        return None
    session, device, inode, offset, tail, klass, untrusted = row
    numbers = (device, inode, offset)
    if not (isinstance(session, str) and is_session_id(session)):
        return None
    if not all(type(n) is int and 0 <= n < _LIMIT for n in numbers) or offset == 0:
        return None
    if not (isinstance(tail, str) and len(tail) == 64 and klass in CLASSES):
        return None
    if type(untrusted) is not bool:
        return None
    try:
        digest = bytes.fromhex(tail)
    except ValueError:
        return None
    return session, Point(device, inode, offset, digest, klass, untrusted)
