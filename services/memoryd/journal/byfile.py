"""The journal by file: what remove, consolidate, undo and hand-edit detection ask of it, without
reading the month on the writer.

For memory.md and user.md it keeps the latest edit (its id, its month file and the offset where
its line starts), what that edit found (before) and left (after), and for each of those entries
the class source of the edit that last brought it into the file (the writing session's taint, or
a promoted note's class). Those are the only entries an edit can take out of the file or an undo
can put back, so the index stays a few kilobytes however long the journal grows.

It is derived, never trusted over the journal:
- it is kept by reading only what was appended since it last looked (whole lines only; a torn
  line is read once it ends), and checks before each use that the part it covers is unchanged:
  the same month files, each of the same inode and size (the last one at least as long), and the
  same bytes just before where it stopped. Anything else rebuilds it from the journal. (A hand
  rewrite of older lines that keeps all of these goes unseen, but undo is still safe: see below);
- the latest edit's line is read back from the journal at its offset and must carry the id;
- an entry whose class it does not hold (a journal with lost or damaged lines) is looked up by
  walking the journal back, as if there were no index.

It also keeps the pending ids the journal has resolved (accept and reject lines carry them, and a
forget's line lists the staged writes it dropped: forgotpending.py), which review asks for at
every staged edit, accept and listing.

It is saved (atomically) to index/journal-index.json once it covers SAVE_BYTES more of the
journal than the saved copy, so a start reads only the journal's tail; a missing, damaged or stale
copy is rebuilt by walking the journal back from its end, once, at start.
"""

import hashlib
import json
import logging
import os
import threading
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from memoryd.home import atomic_write, ensure_dir, open_read, read_file
from memoryd.journal import forgotpending, scan
from memoryd.journal.journal import IDENTITY_FILES, EditLine, Journal, class_source
from memoryd.journal.linefile import parse_line

log = logging.getLogger(__name__)

# Raised when what is kept of a line changes: 3, an imported entry's class is the one it was
# exported with (journal.class_source), so a saved index of 2 is built again; 4, a forget line's
# dropped staged writes are resolved (forgotpending.py).
FORMAT = 4
SAVE_BYTES = 4 * 1024 * 1024
TAIL_CHECK = 256
_NAMES = tuple(f'"to": "{name}"'.encode() for name in IDENTITY_FILES)


@dataclass
class FileState:
    """What the journal says of one file now."""

    id: str | None = None
    month: str | None = None
    offset: int = 0
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    came_with: dict[str, str | None] = field(default_factory=dict)

    def take(self, month: str, offset: int, record: EditLine) -> None:
        """Account for a later line of this file."""
        if record.action != "undo":  # an undo only puts back what an earlier edit wrote
            source = class_source(record)
            for text in record.after:
                if text not in record.before:
                    self.came_with[text] = source
        keep = set(record.after) | set(record.before)
        self.came_with = {t: c for t, c in self.came_with.items() if t in keep}
        self.id, self.month, self.offset = record.id, month, offset
        self.before, self.after = list(record.before), list(record.after)


class _Saved(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    format: int
    months: list[tuple[str, int, int]]  # name, inode, size covered
    tail: str
    files: dict[str, dict]
    resolved: list[str]


class JournalIndex:
    def __init__(self, journal: Journal, path: Path):
        self.journal = journal
        self.path = path
        self._files: dict[str, FileState] = {}
        self._months: list[tuple[str, int, int]] = []  # what is covered: name, inode, size
        self._ready = False
        self._saved = 0  # journal bytes the saved copy covers
        self._tail = ""  # the hash of the last bytes covered (_tail_hash)
        self._resolved: set[str] = set()
        # The writer keeps it; review's listing asks from a reader thread.
        self._lock = threading.RLock()

    # --- what callers ask --------------------------------------------------------------------
    def last_after(self, file: str) -> list[str]:
        """What memoryd last left in file according to the journal ([] before any edit)."""
        with self._lock:
            self.catch_up()
            state = self._files.get(file)
            return list(state.after) if state else []

    def resolved_pending(self) -> set[str]:
        """Every pending id an accept or reject line of the journal names, or a forget's line
        names as a staged write it dropped."""
        with self._lock:
            self.catch_up()
            return set(self._resolved)

    def latest(self, file: str) -> EditLine | None:
        """The journal's last line that changed file, read from the journal itself."""
        with self._lock:
            return self._latest(file)

    def _latest(self, file: str) -> EditLine | None:
        for attempt in range(2):
            self.catch_up()
            state = self._files.get(file)
            if state is None or state.id is None or state.month is None:
                return None
            record = scan.line_at(self.journal.home.edits / state.month, state.offset)
            if record is not None and record.id == state.id and record.to == file:
                return record
            if attempt == 0:
                log.warning("%s: the journal differs from its index at %s; rebuilt", file, state.id)
                self._rebuild(self.journal.month_files())
        return scan.last_with_to(self.journal.month_files(), file)

    def came_with(self, file: str, texts: list[str]) -> dict[str, str | None]:
        """For each of texts (entries of file now), the class source of the edit that last
        brought it in (None when no line did: the owner's)."""
        with self._lock:
            self.catch_up()
            known = dict(self._files.get(file, FileState()).came_with)
        found = {t: known[t] for t in texts if t in known}
        missing = [t for t in texts if t not in found]
        if missing:
            found.update(walk_back(self.journal.month_files(), file, missing))
        return found

    # --- keeping it ---------------------------------------------------------------------------
    def discard(self) -> None:
        """Forget everything, the saved copy too: the journal was rewritten (a forget scrubs text
        the copy may hold; a restore replaces every month). The next question rebuilds."""
        with self._lock:
            self.path.unlink(missing_ok=True)
            self._files, self._months, self._resolved = {}, [], set()
            self._ready, self._saved, self._tail = False, 0, ""

    def catch_up(self) -> None:
        """Bring the index up to the journal's end, rebuilding it if the journal changed under
        it."""
        with self._lock:
            self._catch_up()

    def _catch_up(self) -> None:
        months = self.journal.month_files()
        if not self._ready:
            self._ready = self._load(months) or self._rebuild(months)
        elif not self._covers_prefix(months) or self._tail_hash() != self._tail:
            log.info("%s: the journal changed outside memoryd's appends; index rebuilt", self.path)
            self._ready = self._rebuild(months)
        else:
            self._read_on(months)
        self._tail = self._tail_hash()
        self._maybe_save()

    def _covers_prefix(self, months: list[Path]) -> bool:
        names = [p.name for p in months]
        if names[: len(self._months)] != [m[0] for m in self._months]:
            return False
        edits = self.journal.home.edits
        for number, (name, inode, size) in enumerate(self._months):
            try:
                st = os.stat(edits / name, follow_symlinks=False)
            except FileNotFoundError:
                return False
            last = number == len(self._months) - 1
            if st.st_ino != inode or st.st_size < size or (st.st_size != size and not last):
                return False
        return True

    def _tail_hash(self) -> str:
        if not self._months:
            return ""
        name, _, size = self._months[-1]
        with open_read(self.journal.home.edits / name) as f:
            f.seek(max(0, size - TAIL_CHECK))
            return hashlib.sha256(f.read(size - max(0, size - TAIL_CHECK))).hexdigest()

    def _read_on(self, months: list[Path]) -> None:
        """Read the lines appended since the index last looked, in order."""
        covered = {name: size for name, _, size in self._months}
        last = self._months[-1][0] if self._months else ""
        for path in months:
            if path.name < last:
                continue  # covered whole, and unchanged (_covers_prefix)
            start = covered.get(path.name, 0)
            with open_read(path) as f:
                inode = os.fstat(f.fileno()).st_ino
                f.seek(start)
                data = f.read()
            end = data.rfind(b"\n") + 1  # a last line without its newline is not whole yet
            if path.name in covered and end == 0:
                continue
            self._take_lines(path.name, start, data[:end])
            self._months = [m for m in self._months if m[0] != path.name]
            self._months.append((path.name, inode, start + end))

    def _take_lines(self, month: str, start: int, data: bytes) -> None:
        self._resolved.update(m.decode() for m in scan.PENDING_KEY.findall(data))
        self._resolved.update(forgotpending.ids_in(data))
        position = 0
        while position < len(data):
            end = data.find(b"\n", position)
            raw = data[position:end]
            if any(name in raw for name in _NAMES):
                record = parse_line(raw, EditLine)
                if not isinstance(record, str) and record.to in IDENTITY_FILES:
                    self._files.setdefault(record.to, FileState()).take(
                        month, start + position, record
                    )
            position = end + 1

    def _rebuild(self, months: list[Path]) -> bool:
        """The index from the journal alone: each file's last line, then the walk back for the
        classes of the entries it found and left."""
        self._files = {}
        self._months = []
        self._resolved = scan.pending_ids(months)
        for path in months:
            with open_read(path) as f:
                st = os.fstat(f.fileno())
            self._months.append((path.name, st.st_ino, st.st_size))
        # Lines appended after the stat above are read by the next catch-up.
        sized = {name: size for name, _, size in self._months}
        for file in IDENTITY_FILES:
            with closing(scan.lines_to(months, file)) as found:
                last = next(iter(found), None)
            if last is None:
                continue
            path, offset, record = last
            if offset >= sized[path.name]:
                continue
            state = FileState(id=record.id, month=path.name, offset=offset)
            state.before, state.after = list(record.before), list(record.after)
            wanted = list(dict.fromkeys(record.after + record.before))
            state.came_with = dict(walk_back(months, file, wanted))
            self._files[file] = state
        self._saved = 0
        self._tail = self._tail_hash()
        return True

    def _covered_bytes(self) -> int:
        return sum(size for _, _, size in self._months)

    # --- the saved copy -----------------------------------------------------------------------
    def _maybe_save(self) -> None:
        if self._covered_bytes() - self._saved < SAVE_BYTES:
            return
        saved = {
            "format": FORMAT,
            "months": self._months,
            "tail": self._tail,
            "files": {
                name: {
                    "id": s.id,
                    "month": s.month,
                    "offset": s.offset,
                    "before": s.before,
                    "after": s.after,
                    "came_with": [[t, c] for t, c in s.came_with.items()],
                }
                for name, s in self._files.items()
            },
            "resolved": sorted(self._resolved),
        }
        try:
            ensure_dir(self.path.parent)
            atomic_write(self.path, json.dumps(saved, ensure_ascii=False).encode("utf-8"))
        except OSError as e:
            log.warning("%s: the journal index is not saved now: %s", self.path, e)
            return
        self._saved = self._covered_bytes()

    def _load(self, months: list[Path]) -> bool:
        """The saved copy, if it is of a prefix of the journal as it is now; then the rest read."""
        for left in self.path.parent.glob(f".{self.path.name}.*.tmp"):
            left.unlink(missing_ok=True)  # a save cut short by a crash; the copy is old or new
        try:
            saved = _Saved.model_validate_json(read_file(self.path))
            files = {name: _state(value) for name, value in saved.files.items()}
        except FileNotFoundError:
            return False
        except (OSError, ValidationError, ValueError, TypeError, KeyError) as e:
            log.warning("%s: the saved journal index is not usable (%s); rebuilt", self.path, e)
            return False
        if saved.format != FORMAT or not set(files) <= set(IDENTITY_FILES):
            return False
        self._months = [tuple(m) for m in saved.months]  # type: ignore[misc]
        try:
            fits = self._covers_prefix(months) and self._tail_hash() == saved.tail
        except OSError:
            fits = False
        if not fits:
            log.info("%s: the saved journal index is of another journal; rebuilt", self.path)
            self._months = []
            return False
        self._files = files
        self._resolved = set(saved.resolved)
        self._saved = self._covered_bytes()
        self._read_on(months)
        return True


def _state(value: dict) -> FileState:
    state = FileState(
        id=value["id"],
        month=value["month"],
        offset=value["offset"],
        before=value["before"],
        after=value["after"],
        came_with={t: c for t, c in value["came_with"]},
    )
    checks = (
        isinstance(state.id, str),
        isinstance(state.month, str) and state.month.endswith(".jsonl") and "/" not in state.month,
        isinstance(state.offset, int) and state.offset >= 0,
        all(isinstance(t, str) for t in state.before + state.after),
        all(
            isinstance(t, str) and (c is None or isinstance(c, str))
            for t, c in state.came_with.items()
        ),
    )
    if not all(checks):
        raise ValueError("a file's entry is not of the index's shape")
    return state


def walk_back(months: list[Path], file: str, texts: list[str]) -> dict[str, str | None]:
    """For each of texts, the class source of the last line that brought it into file, walking
    the journal back from its end and stopping once every text is placed; None for a text no
    line brought in."""
    wanted = set(texts)
    found: dict[str, str | None] = {}
    with closing(scan.lines_to(months, file)) as lines:
        for _, _, record in lines:
            if record.action == "undo":
                continue
            for text in wanted - found.keys():
                if text in record.after and text not in record.before:
                    found[text] = class_source(record)
            if found.keys() >= wanted:
                break
    return {text: found.get(text) for text in texts}
