"""Which routine archives bxctl memory backup --keep N removes (what the daily timer runs).

Kept apart from backup.py (which writes an archive) because which archives count as the newest
needs a rule of its own. An archive's name holds the wall clock's time when it was made, and the
newest N are taken by that time. But one made while the clock ran ahead (a bad RTC at boot, mended
later by NTP) is named after every archive made since: taking the names for the order kept those
stale archives and removed, day after day, the real ones made once the clock was mended. Which came
first cannot be known from names (nor from mtimes, the same clock's), and an archive named after
the one just written may as well be the real latest, when it is the clock that is now behind (an
RTC reset to 1970 would otherwise have every real backup pruned). So an archive named later than
the one just written is neither counted nor removed: the newest N are counted among those named no
later than it (the one just written always among those kept), and those named later are left. The
answer and memoryd's log name them and say only what is known (the clock is behind now, or it ran
ahead when they were made) and what to do in either case once the owner has looked at the clock:
told to remove them as leftovers, he would delete his only good backups when it is the clock that
is behind. Once the clock passes their names they are counted again.

Only the routine archives are pruned (memory-<time>[-N].tar.gz): an archive with session logs and
the copy restore --replace makes of what it replaced are named apart (backup.py says why).
"""

import datetime as dt
import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.data import layout
from memoryd.data.backup import ARCHIVE_NAME
from memoryd.home import Home, fsync_dir
from proto.plural import counted

log = logging.getLogger(__name__)

NAME_TIME = "%Y%m%dT%H%M%SZ"
NAMED_MOST = 5  # archives named ahead that an answer names (then how many more)
EITHER = "either the clock is behind now or it ran ahead when they were made"


@dataclass
class Pruned:
    """What a prune did: the archives it removed, and those it left as named after the archive
    just written (ahead: the clock is behind now, or it ran ahead when they were made)."""

    removed: list[str] = field(default_factory=list)
    ahead: list[str] = field(default_factory=list)

    def said(self, keep: int) -> str | None:
        """The sentence the answer adds for the archives named ahead, or None."""
        if not self.ahead:
            return None
        names = ", ".join(self.ahead[:NAMED_MOST])
        if len(self.ahead) > NAMED_MOST:
            names += f" and {len(self.ahead) - NAMED_MOST:,} more"
        return (
            f"left {counted(len(self.ahead), 'backup')} named after this one ({names}), neither "
            f"counted among the newest {keep} nor removed: {EITHER}, which the names cannot "
            "tell. Check the clock with date: if it is behind, keep them (they may be your latest "
            "good backups), set it right and run the backup again; if it is right, the clock ran "
            "ahead when they were made, and you may remove them from backups/ once you no longer "
            "need them"
        )


def _made(folder: Path, name: str) -> bool:
    """Whether memoryd made the archive named name: a regular file, its name's time one a clock
    gives. A name that only looks like one (memory-20260230T...) is the owner's, never pruned."""
    m = ARCHIVE_NAME.match(name)
    try:
        dt.datetime.strptime(m.group(1) if m else "", NAME_TIME)
        return stat.S_ISREG(os.lstat(folder / name).st_mode)
    except (ValueError, OSError):
        return False


def prune(home: Home, keep: int, made: Path | None = None) -> Pruned:
    """Remove all but the newest keep routine archives memoryd made, by the time in their names,
    among those named no later than made (the archive just written, always kept; without it, no
    later than now); those named later are left, in Pruned.ahead."""
    folder = layout.backups(home)
    try:
        listed = os.listdir(folder)
    except OSError as e:  # the new backup stands; the old ones wait for the next prune
        log.warning("%s: older backups not removed: %s", folder, e.strerror or e)
        return Pruned()
    m = ARCHIVE_NAME.match(made.name) if made is not None else None
    latest = m.group(1) if m else dt.datetime.now(dt.UTC).strftime(NAME_TIME)
    found = [
        (m.group(1), int(m.group(2) or 1), n)
        for n in listed
        if (m := ARCHIVE_NAME.match(n)) and (made is None or n != made.name) and _made(folder, n)
    ]
    ahead = [n for time, _, n in sorted(found) if time > latest]
    names = [n for time, _, n in sorted(found) if time <= latest]
    others = max(0, keep - 1) if made is not None else keep
    done = Pruned(ahead=ahead)
    if ahead:
        log.warning(
            "%s: %s named after %s left, neither counted among the newest %d nor removed (%s; "
            "check it with date): %s",
            folder,
            counted(len(ahead), "backup"),
            made.name if made is not None else latest,
            keep,
            EITHER,
            ", ".join(ahead),
        )
    for name in names[: max(0, len(names) - others)]:
        try:
            os.unlink(folder / name)
        except OSError as e:  # the new backup stands; the old one waits for the next prune
            log.warning("%s: cannot be removed: %s", folder / name, e.strerror)
            continue
        done.removed.append(name)
        log.info("%s: removed (keeping the newest %s)", folder / name, counted(keep, "backup"))
    if done.removed:
        try:
            fsync_dir(folder)
        except OSError as e:
            log.warning("%s: cannot be synced: %s", folder, e.strerror or e)
    return done
