"""What a file's read gave, kept per file while the file's stamp holds, for a few files at most.

Why a module of its own: forgotten.jsonl's keys (forgotten.py) and notes.md's markers
(forgottenmarker.py) are each read again only when their file changed, and both keep their reads
the same bounded way.
"""

from pathlib import Path

# The home's file is the one read per part; a restore reads its staged copy once, under a name of
# its own each time, so entries beyond a few are dropped rather than kept for every restore.
CACHED_MOST = 4


def remember(cache: dict, where: Path, stamp, value) -> None:
    if where not in cache and len(cache) >= CACHED_MOST:
        cache.clear()
    cache[where] = (stamp, value)
