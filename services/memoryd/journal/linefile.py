"""Reading memoryd's JSON-lines files (the journal, pending.jsonl, the recall log) as models.

Each of those files has one pydantic model per line, kept in the module that owns the file
(journal.EditLine, review.PendingLine, recall.RecallLine). A line is validated once, when it is
read; one that is not JSON, not an object or not of the model's shape (a hand edit, a torn append)
is damaged: it is skipped with a log line naming the file and the line, as proto.records does for
session logs (a journal line the owner's commands meet is said by damaged.py, with why). What
memoryd writes is the model dumped, so a line reads back as it was written. A UTF-8 byte order
mark starting a line (an editor such as Notepad saves one at the file's start when the owner opens
pending.jsonl or a journal month) is read as nothing, as memory.md, user.md and notes.md read it:
it is invisible where it was put, and the line is otherwise whole.

A file is read a block of whole lines at a time (wholelines.py), never whole: pending.jsonl or a
month that a damaged disk or a mistyped truncate made a gigabyte of NUL bytes is read in bounded
memory. A line longer than any memoryd writes (wholelines.LONG_LINE) stands as its first bytes:
it is damaged whatever they hold, said once in memoryd's log naming the file and the line.
"""

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from memoryd.home import open_read
from memoryd.journal import wholelines
from proto.jsonread import loads_or_none

log = logging.getLogger(__name__)

Line = TypeVar("Line", bound=BaseModel)
_NOT_AN_OBJECT = {"json_invalid", "json_type", "model_type", "model_attributes_type"}
BOM = b"\xef\xbb\xbf"
CHUNK = 1 << 20  # bytes read at a time
_said: set[tuple[str, int, int, int]] = set()  # the long lines said: (file, dev, inode, line)


def without_bom(raw: bytes | str) -> bytes | str:
    """raw with a byte order mark at its start read as nothing."""
    if isinstance(raw, bytes):
        return raw.removeprefix(BOM)
    return raw.removeprefix("\ufeff")


def parse_line(raw: bytes | str, model: type[Line]) -> Line | str:
    """raw as a model, or why it is not one (for a log line)."""
    try:
        return model.model_validate_json(without_bom(raw))
    except ValidationError as e:
        errors = e.errors(include_url=False, include_input=False)
        if any(error["type"] in _NOT_AN_OBJECT and not error["loc"] for error in errors):
            return "is not a JSON object"
        if any(error["type"] == "json_invalid" for error in errors):
            return "is not a JSON object"
        where = ".".join(str(part) for part in errors[0]["loc"]) or "the line"
        return f"is not a {model.__name__} ({where}: {errors[0]['type']})"


def raw_lines(path: Path) -> Iterator[tuple[int, bytes, bool]]:
    """(number from 1, bytes, cut) of each line of path that is not blank, in order, read a
    block of whole lines at a time; cut: longer than wholelines.LONG_LINE, given as its first
    bytes (said once). A missing file has none."""
    try:
        f = open_read(path)  # no link followed, a regular file only
    except FileNotFoundError:
        return
    with f:
        st = os.fstat(f.fileno())
        lines = wholelines.WholeLines(f, st.st_size, CHUNK)
        number = done = 0
        for data, cut in lines:
            first_cut = lines.done - done > cut  # a long line stands as its head, first in data
            done = lines.done
            for at, raw in enumerate(data[:cut].split(b"\n")[:-1]):
                number += 1
                if raw.strip():
                    yield number, raw, _said_cut(path, st, number, first_cut and at == 0)
        if lines.rest.strip():
            number += 1
            yield number, lines.rest, _said_cut(path, st, number, done + len(lines.rest) < f.tell())


def _said_cut(path: Path, st: os.stat_result, number: int, cut: bool) -> bool:
    """cut, having said a cut line in memoryd's log the first time it is met."""
    key = (str(path), st.st_dev, st.st_ino, number)
    if cut and key not in _said:
        _said.add(key)
        log.warning(
            "%s: line %d is longer than %s bytes, more than any line memoryd writes (a run of "
            "NUL bytes a damaged disk or a truncate left?): damaged, read as its first bytes",
            path,
            number,
            f"{wholelines.LONG_LINE:,}",
        )
    return cut


def read_lines(path: Path, model: type[Line]) -> list[Line]:
    """The lines of a .jsonl file as models, in order; a damaged line skipped and logged."""
    records = []
    for number, raw, cut in raw_lines(path):
        record = parse_line(raw, model)
        if isinstance(record, str):
            if not cut:  # a cut line was said once already
                log.warning("%s: line %d %s; skipped", path, number, record)
        else:
            records.append(record)
    return records


def line_id(raw: bytes) -> str | None:
    """The "id" of a line, even of one otherwise damaged (ids once written are never reused)."""
    try:
        value = loads_or_none(raw.removeprefix(BOM).decode("utf-8"))
    except UnicodeDecodeError:
        return None
    edit_id = value.get("id") if isinstance(value, dict) else None
    return edit_id if isinstance(edit_id, str) else None


def all_ids(path: Path) -> list[str]:
    """The id of every line of path that has one, damaged lines included, in file order."""
    return [found for _, raw, _ in raw_lines(path) if (found := line_id(raw))]


def damaged_lines(path: Path, model: type[BaseModel]) -> list[tuple[int, bytes]]:
    """(number from 1, bytes) of each line of path that does not parse as model: what
    read_lines skips, for a small file whose damaged lines are shown and kept (pending.jsonl).
    A line longer than LONG_LINE is one, given as its first bytes (cut_lines names it)."""
    return [
        (number, raw.strip())
        for number, raw, cut in raw_lines(path)
        if cut or isinstance(parse_line(raw, model), str)
    ]


def cut_lines(path: Path) -> list[int]:
    """The numbers of path's lines longer than LONG_LINE: a file holding one cannot be
    rewritten from what is read of it without losing the rest of that line."""
    return [number for number, _, cut in raw_lines(path) if cut]
