"""An undo whose entries would put memory.md over its limit is refused with spec 5's sentence, as
every other edit is: a file over its limit lets no session start (memory_block is refused), and
the undo answered that it takes effect in the next session. Seen from outside: memoryd as a
process, the session's remove sent on the broker socket, the undo on the owner's socket.
"""

import json

from memoryd.memory.edits import limit_sentence
from memoryd.memory.entries import LIMITS
from proto.client import RemoteError, request
from proto.messages import (
    MemoryAdmin,
    MemoryAdminReply,
    MemoryBlock,
    MemoryBlockReply,
    MemoryCall,
    ToolRequest,
    ToolResponse,
)
from tests.memoryd_process import MemorydProcess

BIG = [f"Entry {i}: {'x' * 195}." for i in range(11)]  # 2,286 characters in all


def admin(proc: MemorydProcess, command: str, arg: str) -> str:
    try:
        return request(
            proc.admin_socket, MemoryAdmin(command=command, arg=arg), 30, reply=MemoryAdminReply
        ).text
    except RemoteError as e:
        return str(e)


def block(proc: MemorydProcess) -> str:
    return request(proc.loop_socket, MemoryBlock(), 30, reply=MemoryBlockReply).text


def remove(proc: MemorydProcess, old: str) -> str:
    call = ToolRequest(
        session="mm-p1",
        call_id="c1",
        tool="memory",
        arguments=json.dumps({"action": "remove", "file": "memory", "old": old}),
    )
    message = MemoryCall(request=call, taint="private", untrusted=False)
    return request(proc.broker_socket, message, 60, reply=ToolResponse).output


def test_undo_over_the_limit_is_refused_with_the_limit_sentence(tmp_path) -> None:
    proc = MemorydProcess(tmp_path)
    memory = proc.home / "memory" / "memory.md"
    proc.start()
    try:
        memory.write_text("\n§\n".join(BIG) + "\n")  # by hand, over the limit
        length = len("\n§\n".join(BIG))
        assert length > LIMITS["memory.md"]
        assert "memory.md updated" in remove(proc, BIG[0])
        assert "memory.md" in block(proc)  # under the limit again: sessions start
        lines = admin(proc, "log", "").splitlines()
        edit = [line.split()[0] for line in lines if " remove " in line][-1]
        under = memory.read_bytes()
        journalled = admin(proc, "log", "")

        answer = admin(proc, "undo", edit)

        assert answer == (
            f"refused: edit {edit} cannot be undone: {limit_sentence('memory.md', length)}"
        )
        assert "memory.md would be 2,286 of 2,200 characters; use consolidate" in answer
        assert memory.read_bytes() == under
        assert "memory.md" in block(proc)  # sessions still start
        assert admin(proc, "log", "") == journalled  # nothing journalled
    finally:
        proc.stop()
