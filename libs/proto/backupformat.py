"""The backup archive as memoryd writes it and bxctl reads it back: its format's name and
version, the manifest's name, and the bounds that tell a backup from a bomb; and the largest
export memoryd imports.

memoryd checks an archive whole before a restore lays it (memoryd/data/archive.py); bxctl reads
it again for the session logs it lays itself (bxctl/sessionarchive.py), since memoryd never writes
sessions/. Both keep to what is here, and memoryd's backup writes no archive past it
(memoryd/data/restorable.py): every archive it answers as written is one both read.

What an archive may unpack to is what it declares. The manifest, which lists every file with its
size, comes last (it is written as the files stream through their hashes), so memoryd also
writes the sum of those sizes first, in the tar's global header (DECLARED); a reader checks each
member against what is left of it as the member's header comes, before a byte of its data is
read, lets the stream run only to the members' data and a header's room each (Unpacking), and
refuses the archive once its manifest lists another sum. A declaration is taken only up to the
home's free disk, since every file of the archive is laid there (or up to the ratio below, which
any archive of a memoryd before this one keeps): past that it is refused, naming both. So a
session log that gzip shrinks a thousand times over (a tool result of one repeated line) is
backed up and restored as it is, and an archive that unpacks past its declaration, or declares
more than the disk holds, is refused as it unpacks. An archive that declares nothing (one a
memoryd before this one wrote, or one memoryd did not write) is held to RATIO times its own size
(FLOOR for small ones), as those memoryds held what they wrote to it. Any member that is not a
plain file is refused.

An export is read whole into memory to be checked before anything is written, so memoryd reads none
larger than IMPORT_MAX (memoryd/data/importing.py); bxctl refuses a larger one before copying a
byte of it into the home for memoryd to read (bxctl/handover.py).
"""

import io
import tarfile
from collections.abc import Callable, Mapping

FORMAT = "boxmaker-memory-backup"
# Raised whenever an archive may hold what a reader of the version before would not take (a member
# of a new name, a file of a new shape): that reader refuses it as made by a newer memoryd, since
# names are judged only once the manifest is read. memory/labels.jsonl came under 1 and stays
# there: the readers that do not know it judge names before the manifest, so a 2 would change
# nothing they say, while every reader since knows the file and would refuse a 2 it reads whole.
VERSION = 1
MANIFEST = "manifest.json"
MANIFEST_MAX = 64 << 20
# The bound of an archive that declares nothing: a memoryd before the declaration refused to write
# one past it, so every archive it wrote is within it.
RATIO = 100
FLOOR = 64 << 20
# The global header's key memoryd writes the sum of its files' sizes under (the manifest aside),
# and the room a member's header (a pax header with it) and the reader's read-ahead take at most.
DECLARED = "BOXMAKER.files_size"
DECLARED_DIGITS = 20
HEADER_ROOM = 64 << 10
BLOCK = 512
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
    """The most bytes an archive of archive_size bytes that declares nothing may unpack to
    (headers included)."""
    return max(FLOOR, RATIO * archive_size)


def declaration(files_size: int) -> dict[str, str]:
    """The global header memoryd writes first: the sum of its files' sizes, the manifest aside."""
    return {DECLARED: str(files_size)}


def declared_in(pax_headers: Mapping[str, str]) -> int | None:
    """What an archive's global header declares its files hold, None when it declares nothing;
    ValueError when the declaration is not a whole number memoryd would write."""
    value = pax_headers.get(DECLARED)
    if value is None:
        return None
    if not (value.isascii() and value.isdigit() and len(value) <= DECLARED_DIGITS):
        raise ValueError(f"the archive declares its size as {ascii(value[:40])}, not a number")
    return int(value)


def too_much(declared: int, archive_size: int, free: int | None) -> str | None:
    """Why an archive of archive_size bytes declaring declared bytes of files is not read, or None:
    more than the home's disk has free (free, None when unknown) and than an archive that
    declares nothing may unpack to."""
    if free is None or declared <= max(free, unpacked_max(archive_size)):
        return None
    return (
        f"the archive declares {declared:,} bytes of files, more than the {free:,} bytes free on "
        "the home's disk: make room there, then restore again"
    )


def padded(size: int) -> int:
    return -(-size // BLOCK) * BLOCK


def room(sizes: list[int]) -> int:
    """What a reader lets a declared archive of members of sizes (the manifest among them)
    unpack to: the data of each and a header's room each, and one more for the end."""
    return HEADER_ROOM + sum(padded(size) + HEADER_ROOM for size in sizes)


def is_plain(member: tarfile.TarInfo) -> bool:
    """A regular file, not sparse (a sparse member unpacks to more than it says it holds)."""
    sparse = member.sparse is not None or any(
        key.startswith("GNU.sparse") for key in member.pax_headers
    )
    return member.type in (tarfile.REGTYPE, tarfile.AREGTYPE) and not sparse


class Bounded(io.RawIOBase):
    """The unpacked stream of an archive; too_big(limit) is raised once it passes limit bytes,
    a limit that allow() raises as the archive's members come."""

    def __init__(self, source, limit: int, too_big: Callable[[int], Exception]) -> None:
        self._source = source
        self._read = 0
        self._limit = limit
        self._too_big = too_big

    def readable(self) -> bool:
        return True

    def allow(self, more: int) -> None:
        self._limit += more

    def set_limit(self, limit: int) -> None:
        self._limit = limit

    def read(self, size: int = -1) -> bytes:
        data = self._source.read(size if size is not None and size >= 0 else 1 << 20)
        self._read += len(data)
        if self._read > self._limit:
            raise self._too_big(self._limit)
        return data


class Unpacking:
    """One read of an archive, bounded as its members come. Until the first member's header the
    stream runs to a header's room; that header says whether the archive declares its size
    (memoryd's global header comes before it). Declared, each member's size (from its header,
    before its data) is taken from what is left of the declaration and the stream runs to that
    member's data and the next header's room; undeclared, the stream runs to RATIO times the
    archive's size, as before the declaration. refuse(text) makes the exception raised."""

    def __init__(
        self, source, archive_size: int, free: int | None, refuse: Callable[[str], Exception]
    ) -> None:
        self._archive_size = archive_size
        self._free = free
        self._refuse = refuse
        self._first = True
        self._left = 0
        self.declared: int | None = None
        self.stream = Bounded(source, HEADER_ROOM, self._past)

    def _past(self, limit: int) -> Exception:
        if self.declared is None:
            return self._refuse(
                f"the archive unpacks to more than {limit:,} bytes, far more than a memoryd "
                "backup of its size holds"
            )
        return self._refuse(
            f"the archive unpacks to more than {limit:,} bytes, past the {self.declared:,} "
            "bytes of files it declares and their headers"
        )

    def take(self, tar: tarfile.TarFile, member: tarfile.TarInfo) -> None:
        """Check member, whose header was just read, and let the stream run to its data."""
        if self._first:
            self._first = False
            self._declare(tar.pax_headers)
        if self.declared is None:
            return
        if member.name == MANIFEST:
            if member.size > MANIFEST_MAX:
                raise self._refuse(
                    f"the archive's {MANIFEST} is larger than memoryd ever writes it "
                    f"({member.size:,} bytes)"
                )
        else:
            self._left -= member.size
            if self._left < 0:
                raise self._refuse(
                    f"the archive's files unpack to more than the {self.declared:,} bytes it "
                    f"declares ({member.name[:200]!r} goes past them)"
                )
        self.stream.allow(padded(member.size) + HEADER_ROOM)

    def _declare(self, pax_headers: Mapping[str, str]) -> None:
        try:
            declared = declared_in(pax_headers)
        except ValueError as e:
            raise self._refuse(str(e)) from None
        if declared is None:
            self.stream.set_limit(unpacked_max(self._archive_size))
            return
        problem = too_much(declared, self._archive_size, self._free)
        if problem is not None:
            raise self._refuse(problem)
        self.declared = self._left = declared

    def agrees(self, files: list[dict]) -> None:
        """Refused unless the manifest's files (checked as memoryd lists them) sum to what the
        archive declared, when it declared: the declaration that bounded the read is the
        manifest's."""
        if self.declared is None:
            return
        listed = sum(f["size"] for f in files)
        if listed != self.declared:
            raise self._refuse(
                f"the archive declares {self.declared:,} bytes of files, but its manifest "
                f"lists {listed:,}"
            )
