"""The `arg` of an owner command: a JSON object, checked strictly per command.

The wire body stays {"command", "arg"} (design section 8), so structured arguments travel as JSON
text in arg: {"n": 10, "from": "2026-09-24-0001", "json": true}. Unknown keys, wrong types and
values out of range are refused with one line naming them. The five older commands still take
their plain arg ("10" for log, an id for undo, accept and reject, "" for pending), so an older
bxctl keeps working. `json: true` asks for the answer as one JSON document instead of text.

A plain arg is told from a JSON one by its first character, "{". For undo, accept and reject the
plain arg is an id: one that starts with "{" but is not a JSON object is still an id (and refused
as one that names nothing), never "not valid JSON".
"""

import json
import re
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from memoryd.errors import AdminRefused
from proto.messages import describe
from proto.tools import K_DEFAULT, K_MAX, K_MIN, QUERY_MAX
from proto.version import package_version

LOG_MAX = 10_000
EDIT_TEXT_MAX = 65_536
Id = Annotated[str, StringConstraints(min_length=1, max_length=64)]
File = Literal["memory", "user"]


class Arg(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)
    json_: bool = Field(False, alias="json")


class LogArg(Arg):
    n: Annotated[int, Field(ge=1, le=LOG_MAX)] = 10
    from_: Id | None = Field(None, alias="from")


class PendingArg(Arg):
    from_: Id | None = Field(None, alias="from")


class IdArg(Arg):
    id: Id


class NoArg(Arg):
    pass


class SearchArg(Arg):
    query: Annotated[str, StringConstraints(min_length=1, max_length=QUERY_MAX)]
    k: Annotated[int, Field(ge=K_MIN, le=K_MAX)] = K_DEFAULT


class StatsArg(Arg):
    days: Annotated[int, Field(ge=1, le=366)] = 30
    # False: a program reads the answer (scripts/stack status), not the owner, so the refs it
    # prints are not what memory.md:N and note:N name from now on (shown.py, notesseen.py).
    shown: bool = True


class PromoteArg(Arg):
    ref: Annotated[str, StringConstraints(min_length=1, max_length=2_000)]
    file: File


class FileArg(Arg):
    file: File


class EditArg(Arg):
    file: File
    text: Annotated[str, StringConstraints(max_length=EDIT_TEXT_MAX)]
    base: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


# The owner's data (memoryd/data/): backup, restore, export, import, forget.
_FILE_NAME = re.compile(r"\.?[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
FILE_NAME_RULE = (
    "a file in backups/ is named with ASCII letters, digits, '.', '_' and '-' only (no space), "
    "starting with a letter or a digit (after one '.' at most), at most 128 characters"
)


def _file_name(value: str) -> str:
    if not _FILE_NAME.fullmatch(value):
        raise ValueError(FILE_NAME_RULE)
    return value


FileName = Annotated[str, AfterValidator(_file_name)]


class BackupArg(Arg):
    with_sessions: bool = False
    keep: Annotated[int, Field(ge=1, le=1000)] | None = None
    # Only the prune of keep, made (the archive just copied elsewhere) kept: bxctl copying an
    # archive out asks for it once the copy is made, so a failed copy removes nothing.
    prune_only: bool = False
    made: FileName | None = None

    @model_validator(mode="after")
    def _prune(self) -> "BackupArg":
        if self.prune_only and (self.keep is None or self.made is None):
            raise ValueError("prune_only takes keep and made")
        return self


class RestoreArg(Arg):
    name: FileName
    replace: bool = False


class ExportArg(Arg):
    format: Literal["jsonl", "markdown"] = "jsonl"
    # remove_older false: the older exports stay until a prune_only export (made, the export
    # just copied elsewhere, kept), which bxctl asks for once its copy is made.
    remove_older: bool = True
    prune_only: bool = False
    made: FileName | None = None

    @model_validator(mode="after")
    def _prune(self) -> "ExportArg":
        if self.prune_only and self.made is None:
            raise ValueError("prune_only takes made")
        return self


class ImportArg(Arg):
    name: FileName
    dry_run: bool = False


class ForgetArg(Arg):
    id: Annotated[str, StringConstraints(min_length=1, max_length=4_000)]
    dry_run: bool = False
    check: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")] | None = None


MODELS: dict[str, type[Arg]] = {
    "log": LogArg,
    "pending": PendingArg,
    "undo": IdArg,
    "accept": IdArg,
    "reject": IdArg,
    "show": IdArg,
    "block": NoArg,
    "search": SearchArg,
    "stats": StatsArg,
    "promote": PromoteArg,
    "file": FileArg,
    "edit": EditArg,
    "backup": BackupArg,
    "restore": RestoreArg,
    "export": ExportArg,
    "import": ImportArg,
    "forget": ForgetArg,
}


PLAIN = ("log", "pending", "undo", "accept", "reject")
IDS = ("undo", "accept", "reject")


def _plain(command: str, arg: str) -> Arg:
    """The older commands' plain arg."""
    if command == "log":
        if arg == "":
            return LogArg()
        # int() refuses text of more than 4,300 digits (sys.get_int_max_str_digits), leading
        # zeros counted, with a ValueError: read without them, and a number with more digits
        # than LOG_MAX is out of range unread.
        number = arg.lstrip("0")
        digits = arg.isascii() and arg.isdigit() and len(number) <= len(str(LOG_MAX))
        n = int(number or "0") if digits else 0
        if not 1 <= n <= LOG_MAX:
            raise AdminRefused(f"log takes a number of edits from 1 to 10000, not {arg[:32]!r}")
        return LogArg(n=n)
    if command == "pending":
        return PendingArg()
    if not arg:
        raise AdminRefused(f"refused: {command} takes an id; none was given")
    return IdArg(id=arg[:64])


def parse(command: str, arg: str) -> Arg:
    """The checked argument of command; AdminRefused naming what is wrong."""
    model = MODELS.get(command)
    if model is None:
        raise AdminRefused(f"refused: {command[:32]!r} is not an owner command{_newer_hint()}")
    plain = command in PLAIN
    if not arg.startswith("{"):
        if plain:
            return _plain(command, arg)
        raise AdminRefused(f"refused: {command} takes a JSON object as its argument")
    try:
        value = json.loads(arg)
    except (ValueError, RecursionError):
        if command in IDS:  # an id that happens to start with "{"
            return _plain(command, arg)
        raise AdminRefused(f"refused: the argument of {command} is not valid JSON") from None
    if not isinstance(value, dict):
        raise AdminRefused(f"refused: the argument of {command} is not a JSON object")
    try:
        return model.model_validate(value)
    except ValidationError as e:
        unknown = any(item["type"] == "extra_forbidden" for item in e.errors(include_url=False))
        hint = _newer_hint() if unknown else ""
        raise AdminRefused(
            f"refused: invalid {command} argument: {describe(e)[:500]}{hint}"
        ) from None


def _newer_hint() -> str:
    """What an owner who upgraded bxctl but not memoryd is told: the command or key is one a
    newer bxctl sends, and this memoryd's version says which side is older."""
    return (
        f" (memoryd {package_version()} does not know it: if bxctl was upgraded, restart"
        " memoryd with the same version: scripts/stack up)"
    )
