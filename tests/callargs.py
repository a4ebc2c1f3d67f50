"""A memory call from loose values, for the tests that drive MemoryStore without the server.
The server never comes here: proto.messages has validated its memory_call and service.py hands
the store the parsed arguments and a Caller as they are.

The arguments may be the parsed model, the JSON text the model wrote, or a dict; anything that
does not have the shape of spec 5 is refused with MalformedCall naming what is wrong, and so is a
session state that brokerd could not have sent (Caller.checked).
"""

import json

from memoryd.errors import MalformedCall
from memoryd.trust.caller import Caller
from proto.errors import InvalidArguments
from proto.tools import (
    AddArgs,
    ConsolidateArgs,
    MemoryArgs,
    NoteArgs,
    RemoveArgs,
    ReplaceArgs,
    parse_memory,
)

MEMORY_ARGS = (AddArgs, ReplaceArgs, RemoveArgs, NoteArgs, ConsolidateArgs)


def parse_args(args: object) -> MemoryArgs:
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


def loose_call(
    args: object, *, session: object, call_id: object, taint: object, untrusted: object
) -> tuple[MemoryArgs, Caller]:
    """(arguments, caller) for MemoryStore.call, checked in that order."""
    parsed = parse_args(args)
    return parsed, Caller.checked(session, call_id, taint, untrusted)
