"""JSON read from a file a role keeps, which the owner, an editor or a crash may have damaged.

json.loads raises RecursionError, not a ValueError, on a value nested past the depth its parser
goes ("[" a few thousand deep: a few kilobytes of a damaged file). A reader that caught
ValueError alone, as it does for any other damage, let such a file stop memoryd's start or fail
every call that read it, with a line naming json's decoder rather than the file. loads here says
every failure as NotJson, a ValueError, so each reader says it as it says its other damage,
naming the file; loads_or_none is the same for a reader that only passes the file over.
"""

import json
from typing import Any

from proto.errors import ProtoError

DEEP = "nested deeper than JSON is read here"


class NotJson(ProtoError, ValueError):
    """Bytes or text that are not JSON: not UTF-8, not of JSON's grammar, or nested past the
    parser's depth. Its message says which, in one line."""


def loads(data: bytes | str) -> Any:  # as json.loads: each reader checks the shape it takes
    """The JSON value of data; NotJson when it has none."""
    try:
        return json.loads(data)
    except RecursionError:
        raise NotJson(DEEP) from None
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError, too many digits
        raise NotJson(str(e).splitlines()[0] if str(e) else "not JSON") from None


def loads_or_none(data: bytes | str) -> Any:
    """The JSON value of data, or None when it has none (JSON's null is None too)."""
    try:
        return loads(data)
    except NotJson:
        return None
