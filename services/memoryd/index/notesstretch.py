"""A stretch of notes.md without a header, longer than a part gathers, met by a part: indexed
from what was gathered, the rest of it searched in blocks (noteslong.py), never held.

The search may take more than a part's bounds: Told.scan keeps how far it went, and what the part
gathered, so that the next part (or catch-up) goes on from there when notes.md is still the file
searched, or that file grown by an append (resumed).
"""

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memoryd.index import indexer, noteslong, notesrows, notessaid
from memoryd.index.noteschanged import appended_to
from memoryd.index.notessaid import Told
from memoryd.index.sessionrows import LogState
from memoryd.index.settings import Settings
from memoryd.memory import notelines, notes


def resumed(told: Told, at: int, file: str | None) -> tuple[bytes, list] | None:
    """What the last part gathered of the stretch at byte at whose search it left part way,
    when notes.md is the file it searched (or that file grown by an append)."""
    scan = told.scan
    if scan is None or not scan.buf or scan.start != at:
        return None
    if not (scan.file == file or appended_to(scan.file, file)):
        return None
    return scan.buf, scan.entries


@dataclass
class Long:
    """Where a stretch without a header longer than a part gathers is met: notes.md's open
    descriptor and stat (indexer.file_of whole), the records the part indexed so far, and over:
    whether the part has done what it may, given the records and the bytes it took."""

    fd: int
    path: Path
    file: str | None
    records: int
    over: Callable[[int, int], bool]

    def index(
        self,
        conn: sqlite3.Connection,
        state: LogState,
        settings: Settings,
        told: Told,
        buf: bytes,
        entries: list[notes.NoteEntry],
        first: int,
    ) -> tuple[int, bool | None] | None:
        """Index the entry buf (gathered from state's offset, holding fewer than two headers)
        begins, or pass over the text before the first header it holds, searching the rest of
        it in blocks (noteslong.py), advancing state past it: (rows added, whether a header
        follows, None when the part ended the search first); None when the text at the offset
        continues an entry."""
        start, path = state.bytes, self.path
        head = buf[: notelines.last_end(buf)]
        scan = told.scan
        if scan is None or (scan.start, scan.after) != (start, start + len(head)):
            scan = noteslong.Scan.begin(self.fd, start, start + len(head), self.file)
        elif not (scan.file == self.file or appended_to(scan.file, self.file)):
            scan = noteslong.Scan.begin(self.fd, start, start + len(head), self.file)
        told.scan, scan.file = scan, self.file
        scan.buf, scan.entries = buf, entries  # for the next part, not gathered again
        bytes_before = state.bytes - first
        stretch = noteslong.reach(
            self.fd,
            scan,
            lambda searched: self.over(self.records, bytes_before + searched),
        )
        if stretch is None:
            return 0, None
        if stretch.end == start:  # not one newline: a last line still being written
            noteslong.unended(path, scan)
            return 0, False
        if stretch.end - start < len(buf):  # the stretch ends within what was gathered
            entries = notes.parse(buf[: stretch.end - start], start, state.records)
        after = None
        if not stretch.header and scan.pos > stretch.end:  # an unended run after the last newline
            after = scan.rebased(stretch.end, self.file)
        if first and start == first and (not entries or entries[0].start != first):
            return None
        notessaid.say(told, path, head, start, [e for e in entries if e.start < start + len(head)])
        if told.at == start + len(head):
            told.at, told.lines = stretch.end, told.lines + stretch.lines
        if stretch.end - start > len(buf):  # more than the part gathered
            noteslong.say(path, start, stretch, entries)
        added = indexer.insert_rows(conn, notesrows.rows(path, entries, settings))
        state.records += len(entries)
        state.bytes = stretch.end
        # Past the last newline, at the file's end: what was searched holds none, nor a header.
        told.scan = None if stretch.header else after or scan.rebased(stretch.end, self.file)
        if after is not None:
            noteslong.unended(path, after)  # said once: the next catch-up goes on with it
        return added, stretch.header
