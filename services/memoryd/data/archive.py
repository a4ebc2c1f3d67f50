"""The backup archive: a gzip'd tar of memoryd's files with manifest.json as its last member.

The manifest names the format and its version, memoryd's version, when it was made, each file
with its size and sha256, and the counts (entries, notes, edits, pending, records). It comes last
because it is written as the files stream through their hashes, and so a truncated archive has
none. verify() reads an archive whole before anything is laid: every member must be a regular
file with a name memoryd would write (no absolute path, no "..", no link), listed once in the
manifest with the same size and sha256, and the manifest must list nothing that is missing; the
gzip stream is read to its end, so its own checksum and length are checked too.

A newer memoryd may write a file this one does not know, and its manifest, which says so by its
format version, comes last. So a member of a name memoryd does not write is held (hashed, never
laid) until the manifest is read: an archive of a newer format is refused as newer, naming the way
(that memoryd), and one of this format as not memoryd's. Every bound (the member count, the
unpacked size, no link, no path that climbs out, the manifest's size) is checked as each member
comes, before the manifest, as for every other member. The unpacked size is what the archive
declares first (the sum of its files' sizes, which the manifest must agree with: proto's
backupformat), taken no further than the home's free disk; an archive that declares nothing (one
an older memoryd wrote) keeps the bound of RATIO times its size that memoryd then wrote within.
"""

import datetime as dt
import gzip
import hashlib
import io
import json
import os
import re
import tarfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memoryd.data import restorable
from memoryd.data.snapshot import Snapshot
from memoryd.errors import AdminRefused
from memoryd.home import NotRegular, open_read
from proto.backupformat import (  # noqa: F401 (FLOOR, RATIO...: named as archive.FLOOR too)
    DECLARED,
    FLOOR,
    FORMAT,
    MANIFEST,
    MANIFEST_MAX,
    MEMORY_MEMBERS_MAX,
    RATIO,
    SESSION_MEMBERS_MAX,
    VERSION,
    Unpacking,
    declaration,
    is_plain,
    too_many,
    unpacked_max,
)

# What memoryd writes as the manifest's "created" (a UTC time to the second) and "memoryd" (its
# package version, or "unknown").
CREATED = re.compile(r"[0-9]{4}-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z")
MADE_BY = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+!_-]{0,63}")

COMPRESS_LEVEL = 1  # the journal compresses well even at 1; higher costs time, not much size


def memoryd_version() -> str:
    try:
        from importlib.metadata import version

        return version("boxmaker-memory")
    except Exception:  # noqa: BLE001 - a source tree without its metadata
        return "unknown"


class Damaged(AdminRefused):
    """An archive restore refuses: the text names what is wrong."""


class _Hashing(io.RawIOBase):
    """A held file read through sha256, for tarfile.addfile."""

    def __init__(self, chunks):
        self._chunks = chunks
        self._left = b""
        self.digest = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._left:
            try:
                self._left = next(self._chunks)
            except StopIteration:
                return 0
            self.digest.update(self._left)
        n = min(len(buffer), len(self._left))
        buffer[:n] = self._left[:n]
        self._left = self._left[n:]
        return n


def _info(name: str, size: int, when: float) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = 0o600
    info.mtime = int(when)
    return info


def write(
    out, snap: Snapshot, counts: dict, with_sessions: bool, uncounted: list[dict] | None = None
) -> dict:
    """Write the archive of snap to the binary file out; returns the manifest. uncounted: the
    memory files whose entries counts leaves out, and why (backup.uncounted), listed beside
    them when there are any (a reader of counts alone would take them for no entries)."""
    now = dt.datetime.now(dt.UTC)
    files = []
    # The sum of the files' sizes, first: what restore lets the archive unpack to, whatever gzip
    # made of it (a session log of one line repeated shrinks a thousand times over).
    declared = declaration(sum(held.size for held in snap.files))
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=COMPRESS_LEVEL, mtime=0) as gz:
        with tarfile.open(
            fileobj=gz, mode="w", format=tarfile.PAX_FORMAT, pax_headers=declared
        ) as tar:
            for held in snap.files:
                reader = _Hashing(held.chunks())
                tar.addfile(_info(held.name, held.size, now.timestamp()), io.BufferedReader(reader))
                files.append(
                    {"path": held.name, "size": held.size, "sha256": reader.digest.hexdigest()}
                )
            manifest = {
                "format": FORMAT,
                "version": VERSION,
                "memoryd": memoryd_version(),
                "created": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "with_sessions": with_sessions,
                "files": files,
                "counts": counts,
            }
            if uncounted:
                manifest["uncounted"] = uncounted
            data = json.dumps(manifest, indent=1).encode()
            restorable.check_manifest(data)
            tar.addfile(_info(MANIFEST, len(data), now.timestamp()), io.BytesIO(data))
        unpacked = gz.tell()  # the tar's bytes, end blocks included: what restore reads at most
    restorable.after_writing(unpacked, [held.size for held in snap.files] + [len(data)])
    return manifest


@dataclass
class Verified:
    manifest: dict
    staged: list[str]  # member names checked; those stage gave a path for are laid there


# What an archive may unpack to. No memory file has a bound of its own: one the owner edited past
# its limit by hand is backed up and restored as it is (every reader of it refuses it by its size),
# and what bounds them all is the archive itself: what it declares of its files' sizes, no more
# than the home's disk has free, or, declaring nothing, RATIO times its own size (beyond a floor
# for small ones; proto/backupformat.py). A member is a memory file or a month of the edit or
# recall journal (a century of them), or a session log (hashed, never written to disk). A backup
# checks what it writes against the same bounds (restorable.py).
COUNTED = ("entries", "notes", "edits", "pending", "records")


def _refused(text: str) -> Damaged:
    return Damaged(f"refused: {text}")


def _free(fd: int) -> int | None:
    """What is free on the disk of the archive (backups/, in the home), None if it cannot tell."""
    try:
        st = os.fstatvfs(fd)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def _count_problem(value: object) -> bool:
    return isinstance(value, bool) or not isinstance(value, int) or value < 0


def _check_manifest(value: object) -> dict:
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise Damaged("refused: not a boxmaker memory backup (its manifest is foreign)")
    version = value.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise Damaged("refused: the archive's manifest has no format version (a whole number)")
    if version > VERSION:
        raise Damaged(
            f"refused: the archive is format {version}, made by a newer memoryd (version "
            f"{_shown(value.get('memoryd'))}); this one reads format {VERSION}: restore it with "
            "that memoryd or a newer one"
        )
    if version < 1:
        raise Damaged(
            f"refused: the archive's manifest gives format {version}, which no memoryd writes; "
            f"this one reads format {VERSION}"
        )
    files = value.get("files")
    if not isinstance(files, list) or not all(
        isinstance(f, dict)
        and isinstance(f.get("path"), str)
        and not _count_problem(f.get("size"))
        and isinstance(f.get("sha256"), str)
        for f in files
    ):
        raise Damaged("refused: the archive's manifest does not list its files properly")
    counts = value.get("counts", {})
    if not isinstance(counts, dict) or any(_count_problem(counts.get(key, 0)) for key in COUNTED):
        raise Damaged(
            "refused: the archive's manifest gives its counts wrongly (each of "
            f"{', '.join(COUNTED)} must be a whole number)"
        )
    for key, form in (("created", CREATED), ("memoryd", MADE_BY)):
        if not isinstance(value.get(key, ""), str):
            raise Damaged(f"refused: the archive's manifest gives {key!r} as something not text")
        if key in value and not form.fullmatch(value[key]):
            # The answer names both to the owner: a value memoryd never writes is refused rather
            # than shown, so no manifest can add lines or terminal codes to what bxctl prints.
            raise Damaged(
                f"refused: the archive's manifest gives {key!r} as {_shown(value[key])}, which "
                "memoryd never writes there"
            )
    return value


def _shown(value: object) -> str:
    """A manifest's value as a reader may see it: short, its control characters escaped."""
    return ascii(value)[:40] if not isinstance(value, str) else ascii(value[:32])


def _member_problem(member: tarfile.TarInfo) -> str | None:
    name = member.name
    parts = name.split("/")
    if name.startswith("/") or ".." in parts:
        return f"the archive holds a path that climbs out of the home: {name[:200]!r}"
    if member.issym() or member.islnk():
        return f"the archive holds a link: {name[:200]!r}"
    if not is_plain(member):
        return f"the archive holds something other than a plain file: {name[:200]!r}"
    if restorable.unknown(name) is not None:
        return None  # held until the manifest says the archive's format (verify)
    return restorable.member_problem(name, member.size)


def _members(tar: tarfile.TarFile, unpacking: Unpacking):
    """The archive's members, each checked, at most as many as memoryd ever writes, each within
    what the archive declares (unpacking)."""
    memory = sessions = 0
    for member in tar:
        problem = _member_problem(member)
        if problem is not None:
            raise Damaged(f"refused: {problem}")
        unpacking.take(tar, member)
        if member.name.startswith("sessions/"):
            sessions += 1
        else:
            memory += 1
        if too_many(memory, sessions):
            raise Damaged("refused: the archive holds more files than memoryd ever writes")
        yield member


def verify(path: Path, stage: Callable[[str], Path | None]) -> Verified:
    """Read the archive at path whole; each member is checked, hashed and written where stage
    says (or only hashed, where it says None); Damaged, naming the first problem, unless every
    file matches the manifest."""
    seen: dict[str, tuple[int, str]] = {}
    manifest = None
    strange = None  # the first member of a name memoryd does not write: refused at the manifest
    try:
        with open_read(path) as raw, gzip.GzipFile(fileobj=raw, mode="rb") as gz:
            size = os.fstat(raw.fileno()).st_size
            unpacking = Unpacking(gz, size, _free(raw.fileno()), _refused)
            bounded = unpacking.stream
            with tarfile.open(fileobj=bounded, mode="r|") as tar:
                for member in _members(tar, unpacking):
                    if manifest is not None:
                        raise Damaged(
                            f"refused: the archive holds {member.name!r} after its manifest"
                        )
                    if member.name in seen:
                        raise Damaged(f"refused: the archive holds {member.name!r} twice")
                    source = tar.extractfile(member)
                    if source is None:
                        raise Damaged(f"refused: {member.name!r} cannot be read from the archive")
                    if member.name == MANIFEST:
                        manifest = _check_manifest(_json(source.read()))  # a newer one refused
                        unpacking.agrees(manifest["files"])
                        if strange is not None:
                            raise Damaged(f"refused: {strange}")
                        continue
                    unknown = restorable.unknown(member.name)
                    strange = strange or unknown
                    seen[member.name] = _copy(source, None if unknown else stage(member.name))
            # The tar's end comes before the gzip stream's: read on to it, so that its checksum
            # and length are checked and an archive cut anywhere after the manifest is refused.
            while bounded.read(1 << 16):
                pass
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise Damaged(f"refused: the archive is truncated or damaged ({e})") from None
    except tarfile.TarError as e:
        raise Damaged(f"refused: the archive is not a readable tar.gz ({e})") from None
    except NotRegular as e:
        raise Damaged(f"refused: {e}") from None
    if manifest is None:
        if strange is not None:
            raise Damaged(f"refused: {strange}")
        raise Damaged("refused: the archive has no manifest (truncated, or not a memoryd backup)")
    listed = {f["path"]: (f["size"], f["sha256"]) for f in manifest["files"]}
    for name, (size, digest) in listed.items():
        if name not in seen:
            raise Damaged(f"refused: the archive lacks {name[:200]!r}, which its manifest lists")
        if seen[name] != (size, digest):
            raise Damaged(f"refused: {name!r} does not match its size and sha256 in the manifest")
    for name in seen:
        if name not in listed:
            raise Damaged(f"refused: the archive holds {name!r}, which its manifest does not list")
    return Verified(manifest, list(seen))


def _json(data: bytes) -> object:
    try:
        return json.loads(data)
    except RecursionError:
        raise Damaged("refused: the archive's manifest is JSON nested too deeply") from None
    except ValueError:
        raise Damaged("refused: the archive's manifest is not JSON") from None


def _copy(source, dest: Path | None) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    if dest is None:
        while chunk := source.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
        return size, digest.hexdigest()
    os.makedirs(dest.parent, mode=0o700, exist_ok=True)
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        while chunk := source.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
    return size, digest.hexdigest()
