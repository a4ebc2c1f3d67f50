"""A backup archive read by bxctl for its session logs, with the bounds memoryd's verifier keeps.

memoryd checks an archive whole before it restores it (services/memoryd/data/archive.py); bxctl
reads it again for the session logs it lays (memoryd may have read a copy, and the file may have
changed since): a gzip'd tar read as a stream, unpacked no further than the sum of its files'
sizes it declares first (checked against each member's header as it comes, and against the
manifest's sizes; taken no further than the home's free disk), or, declaring nothing (an older
memoryd's archive), RATIO times its size, and no more members than memoryd writes, the manifest
last and of memoryd's format. survey() gives the
manifest and, for each member under sessions/, its size and sha256, or why it is refused (a name
that is not sessions/<session id>/0.jsonl, a link or anything but a plain file, a name held twice);
a member's name is judged only once the manifest says the archive is of a format this bxctl
reads, so that an archive of a newer memoryd is refused as newer, never as foreign.
"""

import gzip
import hashlib
import json
import os
import stat
import tarfile
from pathlib import Path

from proto.backupformat import (  # noqa: F401 (RATIO, FLOOR...: named as sessionarchive's too)
    FLOOR,
    FORMAT,
    MANIFEST,
    MANIFEST_MAX,
    MEMORY_MEMBERS_MAX,
    RATIO,
    SESSION_MEMBERS_MAX,
    VERSION,
    Unpacking,
    is_plain,
    too_many,
    unpacked_max,
)
from proto.messages import is_session_id

# The memory files, a century of journals and the manifest: memoryd's own bound, from proto.
OTHER_MEMBERS_MAX = MEMORY_MEMBERS_MAX + 1
LOG = "0.jsonl"


class Unusable(Exception):
    """No session log of the archive can be laid; the text says why, in a few words."""


def free_for(home: Path) -> int | None:
    """What is free on the disk of home, where the logs are laid; None if it cannot tell."""
    try:
        st = os.statvfs(home)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def members(raw, free: int | None = None):
    """(member, tar) of the archive in raw, read from its start, at most as many as memoryd
    ever writes, within what it declares (taken no further than free bytes, when given)."""
    for member, tar, _ in _read(raw, free):
        yield member, tar


def _read(raw, free: int | None):
    """(member, tar, the read's bounds) of the archive in raw, as members() gives them."""
    raw.seek(0)
    size = os.fstat(raw.fileno()).st_size
    sessions = others = 0
    with gzip.GzipFile(fileobj=raw, mode="rb") as gz:
        bounds = Unpacking(gz, size, free, Unusable)
        unpacked = bounds.stream
        with tarfile.open(fileobj=unpacked, mode="r|") as tar:
            for member in tar:
                bounds.take(tar, member)
                if member.name.startswith("sessions/"):
                    sessions += 1
                else:
                    others += 1
                if too_many(others, sessions):
                    raise Unusable("the archive holds more files than memoryd ever writes")
                yield member, tar, bounds
        # Read on to the gzip stream's end, as memoryd's verifier does: its checksum and length
        # are checked there, so an archive cut after its manifest is refused here too.
        while unpacked.read(1 << 16):
            pass


def name_problem(member: tarfile.TarInfo) -> str | None:
    """Why a member under sessions/ is not one bxctl lays, or None."""
    parts = member.name.split("/")
    if len(parts) != 3 or not is_session_id(parts[1]) or parts[2] != LOG:
        return f"not a session log's name (sessions/ID/{LOG})"
    if not is_plain(member):
        return "not a plain file"
    return None


def hash_of(source, out: int | None = None) -> tuple[int, str]:
    """The size and sha256 of what source holds, written to the descriptor out as it is read."""
    digest, size = hashlib.sha256(), 0
    while chunk := source.read(1 << 20):
        digest.update(chunk)
        size += len(chunk)
        if out is not None:
            view = memoryview(chunk)
            while view:
                view = view[os.write(out, view) :]
    return size, digest.hexdigest()


def _manifest(member: tarfile.TarInfo, tar: tarfile.TarFile) -> dict:
    source = tar.extractfile(member)
    if not is_plain(member) or member.size > MANIFEST_MAX or source is None:
        raise Unusable("the archive's manifest is not a plain file of the size memoryd writes")
    try:
        value = json.loads(source.read(MANIFEST_MAX + 1))
    except (ValueError, RecursionError):
        raise Unusable("the archive's manifest is not JSON") from None
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise Unusable("not a boxmaker memory backup (its manifest is foreign)")
    version = value.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise Unusable("the archive's manifest has no format version (a whole number)")
    if version > VERSION:
        # Its members are not judged by name before this: a newer memoryd may write a log of a
        # name this bxctl does not know, and what the owner needs is the memoryd that reads it.
        made = value.get("memoryd")
        made = ascii(made[:32]) if isinstance(made, str) else "unknown"
        raise Unusable(
            f"the archive is format {version}, made by a newer memoryd (version {made}); this "
            f"bxctl reads format {VERSION}: restore it with that memoryd or a newer one"
        )
    files = value.get("files")
    if not isinstance(files, list) or not all(
        isinstance(f, dict)
        and isinstance(f.get("path"), str)
        and isinstance(f.get("size"), int)
        and isinstance(f.get("sha256"), str)
        for f in files
    ):
        raise Unusable("the archive's manifest does not list its files properly")
    return value


def survey(raw, free: int | None = None) -> tuple[dict, dict[str, tuple[int, str] | str]]:
    """The manifest, and each session member's (size, sha256), or why it is refused."""
    manifest, found = None, {}
    for member, tar, bounds in _read(raw, free):
        if manifest is not None:
            raise Unusable(f"the archive holds {member.name[:120]!r} after its manifest")
        if member.name == MANIFEST:
            manifest = _manifest(member, tar)
            bounds.agrees(manifest["files"])
        elif member.name.startswith("sessions/"):
            problem = "held twice" if member.name in found else name_problem(member)
            source = None if problem else tar.extractfile(member)
            found[member.name] = hash_of(source) if source else problem or "cannot be read"
    if manifest is None:
        raise Unusable("the archive has no manifest (truncated, or not a memoryd backup)")
    return manifest, found


def open_archive(path: Path):
    """The owner's archive, read only; a link is followed (the owner keeps it anywhere), but it
    must end at a regular file (a FIFO is not waited on)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Unusable("the archive is not a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")
