"""A real small disk for the full-disk tests: a tmpfs mounted for the test, and a filler file that
leaves exactly the free space a case asks for.

tmpfs counts space in pages, exactly: a file takes a page for each 4 KiB it holds (or starts),
while folders, hard links and renames take none. So with P pages free, the (P+1)th write that needs
a new page fails with ENOSPC, and an append that starts inside a page and crosses into a new one
writes the bytes that fit, then fails: a torn append.

Mounting needs root (CI runs as root). Where it is not permitted the test is skipped with the
reason, except where CI=true: there a skip would hide the test, so it fails.
"""

import contextlib
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

PAGE = os.sysconf("SC_PAGE_SIZE")
IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")
FILLER = ".filler"


def skip_or_fail(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"CI=true and the full-disk test cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


@contextlib.contextmanager
def small_tmpfs(size: int):
    """A tmpfs of size bytes, mounted on a new folder for the block's life."""
    folder = Path(tempfile.mkdtemp(prefix="i12-fulldisk-", dir="/tmp"))
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", os.fspath(folder)],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as e:
        folder.rmdir()
        skip_or_fail(f"mount cannot run: {e}")
    if done.returncode != 0:
        folder.rmdir()
        skip_or_fail(f"mount -t tmpfs is not permitted here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", os.fspath(folder)], check=False)
        with contextlib.suppress(OSError):
            folder.rmdir()


def free_bytes(folder: Path) -> int:
    st = os.statvfs(folder)
    return st.f_bavail * st.f_frsize


def fill_leaving(folder: Path, pages: int) -> None:
    """Fill the file system of folder so that exactly pages pages are free."""
    filler = folder / FILLER
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        left = free_bytes(folder) - pages * PAGE
        if left < 0:
            raise RuntimeError(f"only {free_bytes(folder)} bytes are free")
        chunk = b"\0" * (64 * PAGE)
        while left > 0:
            left -= os.write(fd, chunk[: min(left, len(chunk))])
    finally:
        os.close(fd)
    if free_bytes(folder) != pages * PAGE:
        raise RuntimeError(f"{free_bytes(folder)} bytes free, not {pages * PAGE}")


def unfill(folder: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (folder / FILLER).unlink()


def pad_to_cross(path: Path, head: bytes, tail: bytes, before_boundary: int) -> None:
    """Append head, filler bytes and tail so that path ends before_boundary bytes short of a page
    boundary: the next append longer than that crosses into a new page."""
    size = path.stat().st_size if path.exists() else 0
    n = (-(size + len(head) + len(tail) + before_boundary)) % PAGE
    with open(path, "ab") as f:
        f.write(head + b"p" * n + tail)
    if (path.stat().st_size + before_boundary) % PAGE != 0:
        raise RuntimeError(f"{path} was not padded to the boundary")
