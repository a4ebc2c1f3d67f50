"""The journal lines of the edits an import's provenance names, found without a scan per item.

Every item of an export names the edit that wrote it in its home. For another home's export
none of those ids is here, and searching the month files for each (halving, then from the end
when halving misses) read the whole journal once per item: an hour for a large export against a
journal of a few months. So the ids the journal holds are asked first of the ids kept per month
(heldids.py, read on only as far as the months grew): an id no month holds costs no read. A held
id is found by halving its month (a few lines read); when halving misses (a clock that went
back), its month is read once, a window at a time, for the places of every id the file names
(scan.ids_at), and read on from there only as far as it grew. What is kept is bounded by the
file imported: a place per id it names, a size per month.
"""

from pathlib import Path

from memoryd.home import Home
from memoryd.journal import heldids, months, scan
from memoryd.journal.idform import EDIT_ID
from memoryd.journal.journal import EditLine


class Named:
    """The lines of the edit ids ids (an import's) in home's journal, as it is when asked."""

    def __init__(self, home: Home, ids: set[str]):
        self.home = home
        self.ids = {i for i in ids if EDIT_ID.match(i)}
        self._places: dict[Path, tuple[dict[str, int], int]] = {}  # a month read: ids, how far
        self.refresh()

    def refresh(self) -> None:
        """The journal's ids as they are now (other writes come between an import's batches)."""
        self.held = heldids.held(self.home.edits) if self.ids else heldids.Held({})

    def line(self, edit: str) -> EditLine | None:
        """The line of edit, from its day's month file on; None when no month holds it."""
        if edit not in self.ids:
            return None
        holding = [self.home.edits / name for name in self.held.files(edit)]
        for path in months.from_month(holding, edit):
            record = None if path in self._places else scan.line_by_halving(path, edit)
            if record is None:  # a month halving missed in once is asked of its places after
                record = self._read(path, edit)
            if record is not None:
                return record
        return None

    def _read(self, path: Path, edit: str) -> EditLine | None:
        places, read = self._places.get(path, ({}, 0))
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return None
        if size < read:  # not the file read before: read again from its start
            places, read = {}, 0
        if edit not in places and read < size:
            more, read = scan.ids_at(path, self.ids, read)
            places = {**more, **places}
        self._places[path] = (places, read)
        at = places.get(edit)
        record = scan.line_at(path, at) if at is not None else None
        if at is not None and (record is None or record.id != edit):  # rewritten since
            places, read = scan.ids_at(path, self.ids)
            self._places[path] = (places, read)
            at = places.get(edit)
            record = scan.line_at(path, at) if at is not None else None
        return record if record is not None and record.id == edit else None
