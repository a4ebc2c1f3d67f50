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
"""

import logging
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from memoryd.home import read_file
from proto.jsonread import loads_or_none

log = logging.getLogger(__name__)

Line = TypeVar("Line", bound=BaseModel)
_NOT_AN_OBJECT = {"json_invalid", "json_type", "model_type", "model_attributes_type"}
BOM = b"\xef\xbb\xbf"


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


def read_lines(path: Path, model: type[Line]) -> list[Line]:
    """The lines of a .jsonl file as models, in order; a damaged line skipped and logged."""
    try:
        data = read_file(path)
    except FileNotFoundError:
        return []
    records = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        record = parse_line(raw, model)
        if isinstance(record, str):
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
    try:
        data = read_file(path)
    except FileNotFoundError:
        return []
    return [found for raw in data.split(b"\n") if raw.strip() and (found := line_id(raw))]


def damaged_lines(path: Path, model: type[BaseModel]) -> list[tuple[int, bytes]]:
    """(number from 1, bytes) of each line of path that does not parse as model: what
    read_lines skips, for a small file whose damaged lines are shown and kept (pending.jsonl)."""
    try:
        data = read_file(path)
    except FileNotFoundError:
        return []
    return [
        (number, raw.strip())
        for number, raw in enumerate(data.split(b"\n"), start=1)
        if raw.strip() and isinstance(parse_line(raw, model), str)
    ]
