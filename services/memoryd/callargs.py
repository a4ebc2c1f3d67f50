"""A memory call as the server hands it over: its arguments and the session's state, validated.

The server may pass the parsed model, the JSON text the model wrote, or a dict. Anything that does
not have the shape of spec 5 is refused with MalformedCall naming what is wrong. The session id
goes into notes.md headers, so it must match the SessionId pattern.
"""

import json

from memoryd.errors import MalformedCall
from proto.errors import InvalidArguments
from proto.labels import is_class
from proto.messages import is_session_id
from proto.tools import AddArgs, ConsolidateArgs, NoteArgs, RemoveArgs, ReplaceArgs, parse_memory

MEMORY_ARGS = (AddArgs, ReplaceArgs, RemoveArgs, NoteArgs, ConsolidateArgs)


def parse_args(args: object):
    """The memory call's arguments as a model, from a model, JSON text or a dict."""
    if isinstance(args, MEMORY_ARGS):
        return args
    if isinstance(args, dict):
        args = json.dumps(args)
    if not isinstance(args, str):
        raise MalformedCall("refused: malformed call: the arguments must be a JSON object")
    try:
        return parse_memory(args)
    except InvalidArguments as e:
        raise MalformedCall(f"refused: malformed call: {e}") from None


def check_state(session: object, call_id: object, taint: object, untrusted: object) -> None:
    if not is_session_id(session):
        raise MalformedCall("refused: malformed call: the session id is not valid")
    if not isinstance(call_id, str) or not 1 <= len(call_id) <= 200:
        raise MalformedCall("refused: malformed call: the call id must be 1 to 200 characters")
    if not is_class(taint):
        raise MalformedCall("refused: malformed call: taint must be public, private or secret")
    if not isinstance(untrusted, bool):
        raise MalformedCall("refused: malformed call: untrusted must be true or false")
