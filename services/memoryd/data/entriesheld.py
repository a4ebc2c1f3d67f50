"""The entries of a memory.md or user.md a backup holds, counted as memoryd reads the file.

A file memoryd reads no entry of (hand edited and saved in another encoding than UTF-8, or past
the MAX_BYTES it reads at all) is archived as it is, to be mended, and adds none to the counts
restore checks; but a backup that said only "0 entries" of it would tell the owner the archive
holds no memory. So such a file is named beside the counts (uncounted), in the words stats and
the block use for it (entries.decode, entries.TooLarge), with its size: it is kept byte for byte.
"""

from memoryd.data.snapshot import Held, Snapshot
from memoryd.errors import FileDamaged
from memoryd.memory import entries
from proto import plural

# The files a backup counts entries of, as named in the archive.
FILES = ("memory/memory.md", "memory/user.md")


def count(held: Held) -> int:
    """The entries of a held memory.md or user.md; FileDamaged when memoryd reads none (not
    UTF-8; past MAX_BYTES, never read whole)."""
    name = held.name.removeprefix("memory/")
    if held.size > entries.MAX_BYTES:
        raise entries.TooLarge(name, held.size)
    return len(entries.parse(entries.decode(b"".join(held.chunks()), name)))


def uncounted(snap: Snapshot) -> list[dict]:
    """The held memory.md and user.md whose entries the counts leave out: each one's name in the
    archive, size and why (memoryd's words), in the archive's order."""
    found = []
    for held in snap.files:
        if held.name in FILES:
            try:
                count(held)
            except FileDamaged as e:
                found.append({"path": held.name, "size": held.size, "problem": str(e)})
    return found


def said(found: list[dict]) -> str:
    """What a backup's answer adds after its counts: each file they leave out, why, and that it
    is archived byte for byte all the same ("" when there is none)."""
    return "".join(
        f"; but {u['problem']}: its entries are not counted here (memoryd reads none of them "
        f"until it is mended), and it is archived byte for byte "
        f"({plural.counted(u['size'], 'byte')})"
        for u in found
    )
