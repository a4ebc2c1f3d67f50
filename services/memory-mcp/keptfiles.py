"""The files a client's kept state lives in: named by the home itself, not by how --home is spelled.

One client may hold two registrations (config-snippet prints both) whose --home name one folder
two ways: a symbolic link to it, `/tmp` and `/private/tmp`, a `..`, a bind mount. Named by the
text given, they were two homes: a memory-tainted hit kept by one registration was not seen by
the other, whose trusted writes then put the hit's text into user.md. So the state is kept under
two names of the folder, written both at every raising and read both (the stricter counts):

- its real path (every link and `..` resolved): stable across restarts and across filesystems
  that give a folder a new device number at each mount (btrfs subvolumes, NFS);
- its device and inode: the same through a bind mount, and after the home is moved on its disk.

A home that cannot be stat'ed (not there yet) has the first name only. A home copied elsewhere
(restored from a backup) is another folder by both names: its clients start from memoryd's recall
log, as a client whose kept state is gone does (startstate.py).

Earlier versions named the file by the path as given (made absolute, not resolved): such a file,
for the spelling this connection was given or for the real path, is still read (a client raised
before an upgrade stays raised), carried over to the two names under the folder's lock and
removed (adopt, in startstate.py). A clean record of the old naming is not carried: it could not
see what a registration spelled another way was given, so the recall log is read once instead.
"""

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class KeptFiles:
    """Where one client's state on one home is kept (all in one folder)."""

    names: tuple[Path, ...]  # written at every raising and read: the real path's, the folder's
    legacy: tuple[Path, ...]  # earlier versions' names, read and carried over once

    @property
    def primary(self) -> Path:
        """The file named by the real path, the one a log line or an answer names."""
        return self.names[0]

    @property
    def folder(self) -> Path:
        return self.names[0].parent


def _digest(text: str | bytes) -> str:
    data = os.fsencode(text) if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()[:16]


def kept_files(folder: Path, home: Path, client: str) -> KeptFiles:
    """client is already in the SessionId alphabet (session.client_part), which holds no `.`, so
    the names below cannot be another client's, nor an earlier version's `{client}-{digest}`;
    the digests keep homes apart without putting a path in a file name."""
    given = home.absolute()
    real = os.path.realpath(given)
    names = [folder / f"{client}.path-{_digest(real)}.json"]
    try:
        st = os.stat(real)
    except OSError:
        pass  # not there (yet): the real path alone names it
    else:
        names.append(folder / f"{client}.folder-{_digest(f'{st.st_dev}:{st.st_ino}')}.json")
    legacy = []
    for spelling in (str(given), real):
        path = folder / f"{client}-{_digest(spelling)}.json"
        if path not in legacy:
            legacy.append(path)
    return KeptFiles(tuple(names), tuple(legacy))


def as_kept(kept: "KeptFiles | Path") -> KeptFiles:
    """One file taken as all of a home's names (a caller that names the file itself)."""
    return kept if isinstance(kept, KeptFiles) else KeptFiles((kept,), ())
