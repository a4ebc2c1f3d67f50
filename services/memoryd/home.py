"""The layout of {home} as memoryd sees it, with the safe ways to write (from proto.files).

memoryd writes only through these: atomic_write replaces a file whole (temp file, fsync, rename,
fsync the folder); append_bytes/append_line add to a journal and fsync. Folders 0700, files 0600
(spec 3, 6).
"""

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from proto.files import (  # noqa: F401  (memoryd writes through these)
    DIR_MODE,
    FILE_MODE,
    append_bytes,
    append_line,
    atomic_write,
    create_if_missing,
    ensure_dir,
    fsync_dir,
)


@dataclass(frozen=True)
class Home:
    root: Path

    @property
    def memory(self) -> Path:
        return self.root / "memory"

    @property
    def index_dir(self) -> Path:
        return self.root / "index"

    @property
    def index_db(self) -> Path:
        return self.index_dir / "memory.sqlite3"

    @property
    def sessions(self) -> Path:
        return self.root / "sessions"

    @property
    def run(self) -> Path:
        return self.root / "run"

    def memory_file(self, name: str) -> Path:
        """soul.md, memory.md, user.md, notes.md or pending.jsonl."""
        return self.memory / name

    @property
    def edits(self) -> Path:
        return self.memory / "edits"

    @property
    def recalls(self) -> Path:
        return self.memory / "recalls"

    def edits_month(self, when: dt.datetime) -> Path:
        return self.edits / f"{when:%Y-%m}.jsonl"

    def recalls_month(self, when: dt.datetime) -> Path:
        return self.recalls / f"{when:%Y-%m}.jsonl"

    def session_log(self, session: str) -> Path:
        """The log of a session whose id the caller has already validated."""
        return self.sessions / session / "0.jsonl"
