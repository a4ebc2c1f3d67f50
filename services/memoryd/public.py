"""What another package may use of memoryd: the memory block as a new session gets it.

memory-mcp offers the block to its clients without asking memoryd for it (it reaches memoryd only
through the broker socket, as brokerd does), so it renders the block from {home}/memory/ itself.
This is the one function it calls, so the text is memoryd's own and memory-mcp depends on no
module inside memoryd's rooms.
"""

from pathlib import Path

from memoryd.errors import MemorydError
from memoryd.home import Home
from memoryd.memory import block
from memoryd.memory.filesgate import shared_read

# memory_block raises MemorydError when the block cannot be built (a file over its limit,
# missing, unreadable, a link): its text is the reason a new session would be refused with.
__all__ = ["MemorydError", "memory_block"]


def memory_block(home: Path, max_class: str = "private") -> str:
    """The block memoryd would serve loopd for the home at home, with [index] max_class set to
    max_class: an entry whose class is above it is left out, its class found by walking the
    journal ({home}/memory/edits/) back. MemorydError if there is no block. Built while no
    change of memoryd's is in flight (the memory folder's shared lock, filesgate.py), so that it
    never holds a write memoryd then takes back, nor a restore half laid."""
    where = Home(home)
    with shared_read(where.memory):
        return block.build(where, block.Classes(max_class))
