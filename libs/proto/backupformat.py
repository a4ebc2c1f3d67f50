"""The backup archive as memoryd writes it and bxctl reads it back: its format's name and
version, the manifest's name, and the bounds that tell a backup from a bomb; and the largest
export memoryd imports.

memoryd checks an archive whole before a restore lays it (memoryd/data/archive.py); bxctl reads
it again for the session logs it lays itself (bxctl/sessionarchive.py), since memoryd never writes
sessions/. Both keep to what is here, and memoryd's backup writes no archive past it
(memoryd/data/restorable.py): every archive it answers as written is one both read. memoryd
writes the archive with gzip at level 1, which shrinks its journals and notes a few times over,
never a hundred: an archive that unpacks to more than RATIO times its own size (beyond FLOOR for
small ones) is refused, as is any member that is not a plain file.

An export is read whole into memory to be checked before anything is written, so memoryd reads none
larger than IMPORT_MAX (memoryd/data/importing.py); bxctl refuses a larger one before copying a
byte of it into the home for memoryd to read (bxctl/handover.py).
"""

import io
import tarfile
from collections.abc import Callable

FORMAT = "boxmaker-memory-backup"
# Raised whenever an archive may hold what a reader of the version before would not take (a member
# of a new name, a file of a new shape): that reader refuses it as made by a newer memoryd, since
# names are judged only once the manifest is read. memory/labels.jsonl came under 1 and stays
# there: the readers that do not know it judge names before the manifest, so a 2 would change
# nothing they say, while every reader since knows the file and would refuse a 2 it reads whole.
VERSION = 1
MANIFEST = "manifest.json"
MANIFEST_MAX = 64 << 20
RATIO = 100
FLOOR = 64 << 20
# The most session logs an archive holds. Each member costs the verifier a name and a digest held
# until the manifest (the last member) is read, and the manifest a line for it: 100,000 logs are a
# manifest of about 15 MB, well inside MANIFEST_MAX, and some tens of MB of the reader's memory. A
# backup of more is refused before it is written (memoryd/data/restorable.py), naming the count.
SESSION_MEMBERS_MAX = 100_000
# The files of the archive's memory/ beside the months of its journals (memoryd keeps 7 there:
# memoryd/data/layout.py ROOT_FILES, held within this by a test), and a century of months of the
# edit journal and of the recall log.
MEMORY_FILES_MAX = 16
MEMORY_MEMBERS_MAX = MEMORY_FILES_MAX + 2 * 12 * 100
IMPORT_MAX = 64 << 20


def too_many(others: int, sessions: int) -> bool:
    """Whether an archive of others members (the memory files and the manifest) and sessions
    session logs holds more than a reader takes: memoryd's restore and bxctl refuse it, and
    memoryd's backup refuses to write it."""
    return others > MEMORY_MEMBERS_MAX + 1 or sessions > SESSION_MEMBERS_MAX


def unpacked_max(archive_size: int) -> int:
    """The most bytes an archive of archive_size bytes may unpack to (headers included)."""
    return max(FLOOR, RATIO * archive_size)


def is_plain(member: tarfile.TarInfo) -> bool:
    """A regular file, not sparse (a sparse member unpacks to more than it says it holds)."""
    sparse = member.sparse is not None or any(
        key.startswith("GNU.sparse") for key in member.pax_headers
    )
    return member.type in (tarfile.REGTYPE, tarfile.AREGTYPE) and not sparse


class Bounded(io.RawIOBase):
    """The unpacked stream of an archive; too_big(limit) is raised once it passes limit bytes."""

    def __init__(self, source, limit: int, too_big: Callable[[int], Exception]) -> None:
        self._source = source
        self._left = limit
        self._limit = limit
        self._too_big = too_big

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self._source.read(size if size is not None and size >= 0 else 1 << 20)
        self._left -= len(data)
        if self._left < 0:
            raise self._too_big(self._limit)
        return data
