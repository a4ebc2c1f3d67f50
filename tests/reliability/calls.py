"""Requests to a running memoryd, as brokerd and loopd send them, for the reliability tests."""

import json
from itertools import count

from proto.client import request
from proto.messages import MemoryCall, ToolRequest, ToolResponse

_calls = count(1)


def tool_call(
    process, tool: str, arguments, *, session: str = "mm-rel0001", untrusted: bool = False
) -> ToolResponse:
    """One recall or memory call over the brokerd socket; arguments as a dict or JSON text."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    # Built without validation, so a test can send what a hostile peer would: memoryd validates.
    req = ToolRequest.model_construct(
        session=session, call_id=f"c{next(_calls)}", tool=tool, arguments=text
    )
    message = MemoryCall.model_construct(request=req, taint="private", untrusted=untrusted)
    return request(process.broker_socket, message, timeout=30)


def memory(process, untrusted: bool = False, **arguments) -> ToolResponse:
    # A session memoryd was once told is untrusted stays so (trust/monotone.py): an untrusted
    # call is another session's.
    session = "mm-rel0002" if untrusted else "mm-rel0001"
    return tool_call(process, "memory", arguments, session=session, untrusted=untrusted)


def recall(process, query: str, k: int = 5) -> ToolResponse:
    return tool_call(process, "recall", {"query": query, "k": k})
