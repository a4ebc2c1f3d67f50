"""What restore takes of an archive, checked by backup too, before and after it writes one.

Restore reads an archive within bounds that keep a hostile one from filling the disk or memoryd's
memory (proto/backupformat.py): the names memoryd writes, a manifest of at most MANIFEST_MAX
bytes, at most so many members, and no more unpacked than the sum of its files' sizes the archive
declares first (and the manifest lists), with a header's room for each. A backup past any of them
would be answered "backup written" and refused by every restore of it, while `--keep` pruned the
older archives that restore takes. So backup asks the same questions of what it is about to write
(before_writing: names, sizes and counts, known from the snapshot) and of what it wrote
(after_writing: the unpacked size against the room its members' sizes give), and refuses in one
line, naming what is past which bound and what to do, leaving no archive and removing none.
How well the files compress is no bound: a session log of one line repeated a million times is
what loopd wrote, and restore takes it at its declared size, the home's free disk allowing.

The memory files themselves have no bound of their own: soul.md, memory.md and user.md edited by
hand past their limits, even past what memoryd reads of them (entries.MAX_BYTES), are archived as
they are and restored as they are, and every reader of them there refuses them by their size, as
in the home they came from; the archive's own bound is what limits them.
"""

from collections.abc import Iterable

from memoryd.data import layout
from memoryd.data.snapshot import Held
from memoryd.errors import AdminRefused
from proto import backupformat as bounds
from proto.plural import counted


def unknown(name: str) -> str | None:
    """Why restore refuses a member named name that this memoryd does not write, or None. A
    newer memoryd may write a file this one does not know, so the archive's verifier holds this
    until the manifest says which format the archive is (archive.py)."""
    if name != bounds.MANIFEST and not layout.MEMBER.fullmatch(name):
        return f"the archive holds a file memoryd does not write: {name[:200]!r}"
    return None


def member_problem(name: str, size: int) -> str | None:
    """Why restore refuses a plain file named name of size bytes in an archive, or None."""
    if (problem := unknown(name)) is not None:
        return problem
    if name == bounds.MANIFEST and size > bounds.MANIFEST_MAX:
        return f"the archive's {name} is larger than memoryd ever writes it ({size:,} bytes)"
    return None


def _refused(what: str, fix: str) -> AdminRefused:
    return AdminRefused(
        f"refused: {what}, so no restore would take the archive; no archive was left and no "
        f"older one removed: {fix}"
    )


def before_writing(files: Iterable[Held]) -> None:
    """Refused (AdminRefused, one line) when an archive of files would be one restore refuses."""
    others, sessions = 1, 0  # the manifest is a member too
    for held in files:
        problem = member_problem(held.name, held.size)
        if problem is not None:
            raise _refused(problem.removeprefix("the archive holds "), "tell memoryd's maintainers")
        if held.name.startswith("sessions/"):
            sessions += 1
        else:
            others += 1
    if not bounds.too_many(others, sessions):
        return
    if sessions > bounds.SESSION_MEMBERS_MAX:
        raise _refused(
            f"sessions/ holds {counted(sessions, 'session log')}, more than one archive holds "
            f"({bounds.SESSION_MEMBERS_MAX:,})",
            "back up the memory without --with-sessions, and keep the logs with a copy of "
            "sessions/ (cp -a, which keeps their owner)",
        )
    raise _refused(
        f"memory/ holds {counted(others - 1, 'file')}, more than one archive holds "
        f"({bounds.MEMORY_MEMBERS_MAX:,})",
        "move the months that are not memoryd's out of memory/edits/ and memory/recalls/",
    )


def check_manifest(data: bytes) -> None:
    """Refused (AdminRefused) when the manifest written would be one restore refuses."""
    problem = member_problem(bounds.MANIFEST, len(data))
    if problem is not None:
        raise _refused(problem.removeprefix("the archive's "), "tell memoryd's maintainers")


def after_writing(unpacked: int, sizes: list[int]) -> None:
    """Refused (AdminRefused) when the archive written, unpacking to unpacked bytes (headers
    included), passes what restore lets members of sizes (the manifest's among them) unpack to:
    only headers larger than memoryd's names make could, so no file of the owner's is to blame."""
    if unpacked <= bounds.room(sizes):
        return
    raise _refused(
        f"the archive would unpack to {unpacked:,} bytes, more than its {len(sizes):,} members' "
        f"{sum(sizes):,} bytes and their headers' room ({bounds.room(sizes):,})",
        "tell memoryd's maintainers",
    )
