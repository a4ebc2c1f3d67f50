"""What bxctl checks of the arguments the owner typed, before anything is sent.

A value wrong in itself (empty, not one of its choices, not the shape of an id, longer than memoryd
takes, not valid UTF-8) is a usage error whatever the command: exit 2, said as typer says every
usage error ("Invalid value for 'ID': ... (see: bxctl memory undo --help)"). memoryd checks the
same again; what only memoryd can know (an id that names no edit, a note that is not there) stays
its refusal, exit 1. bxctl never reads memoryd's wording to tell the two apart.
"""

import re
from collections.abc import Callable

import typer

from bxctl.common import not_utf8_byte
from proto.messages import EDIT_ID_PATTERN, PENDING_ID_PATTERN
from proto.tools import QUERY_MAX

# As memoryd's journal and review name their edits
EDIT_ID = re.compile(EDIT_ID_PATTERN)
PENDING_ID = re.compile(PENDING_ID_PATTERN)
ID_MAX = 64  # memoryd's longest id
FORGET_REF_MAX = 4_000  # a forget's REF may be an entry's exact text
PROMOTE_REF_MAX = 2_000


def _bad(why: str) -> typer.BadParameter:
    return typer.BadParameter(why)


def _shown(value: str) -> str:
    """The value quoted, its controls and invisible characters escaped (repr's escapes), cut."""
    cut = value if len(value) <= 40 else value[:40] + "..."
    return repr(cut)


def _written(value: str, what: str, longest: int, blank_ok: bool = False) -> str:
    """value as typed when it is neither empty (nor blank, unless blank_ok) nor longer than
    longest nor other than UTF-8."""
    if not (value if blank_ok else value.strip()):
        raise _bad(f"{what} is not empty")
    if (byte := not_utf8_byte(value)) is not None:
        raise _bad(f"{what} is not valid UTF-8{byte}")
    if len(value) > longest:
        raise _bad(f"{what} is {len(value):,} characters, over the {longest:,} memoryd takes")
    return value


def _id_of(pattern: re.Pattern, what: str, shape: str) -> Callable[[str | None], str | None]:
    def check(value: str | None) -> str | None:
        if value is None:
            return None
        _written(value, what, ID_MAX)
        if not pattern.match(value):
            raise _bad(f"{_shown(value)} is not {what} ({shape}, as bxctl prints it)")
        return value

    return check


edit_id = _id_of(EDIT_ID, "an edit id", "YYYY-MM-DD-NNNN")
pending_id = _id_of(PENDING_ID, "a pending id", "p-YYYY-MM-DD-NNNN")


def query(value: str) -> str:
    return _written(value, "a query", QUERY_MAX, blank_ok=True)  # as recall takes it


def forget_ref(value: str) -> str:
    return _written(value, "an ID", FORGET_REF_MAX)  # forget names its REF ID (its help)


def promote_ref(value: str) -> str:
    return _written(value, "a REF", PROMOTE_REF_MAX)


def choice(*choices: str) -> Callable[[str], str]:
    """A value that must be one of choices."""
    listed = " or ".join(choices)

    def check(value: str) -> str:
        if value not in choices:
            raise _bad(f"{listed}, not {_shown(value)}")
        return value

    return check
