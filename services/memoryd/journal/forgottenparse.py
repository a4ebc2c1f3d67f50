"""The lines of memory/forgotten.jsonl read from its bytes: the keys, the digests of forgotten
texts, the damaged lines (torn appends, hand edits), and which session keys the forget that listed
them vouched for with the digests of what it took (forgotten.alone says why that matters). Pure
functions of the bytes, so that the reader, the writer's mend and a restore's staged copy read
the file the same way."""

from memoryd.journal import forgetlines
from proto.jsonread import loads_or_none

KEY = forgetlines.KEY
Forgot = forgetlines.Forgot


def parse(data: bytes) -> tuple[set[str], list[int]]:
    """The keys of the file's bytes, and the numbers (from 1) of its lines that hold neither a
    key nor a digest."""
    found, damaged, _ = parse_whole(data)
    return found, damaged


def parse_whole(data: bytes) -> tuple[set[str], list[int], set[Forgot]]:
    """parse(), and the digests of forgotten texts its lines list."""
    found: set[str] = set()
    damaged: list[int] = []
    texts: set[Forgot] = set()
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        value = loads_or_none(raw)
        key = value.get("key") if isinstance(value, dict) else None
        forgot = forgetlines.forgot_of(value) if key is None else None
        if isinstance(key, str) and KEY.match(key):
            found.add(key)
        elif forgot is not None:
            texts.add(forgot)
        else:
            damaged.append(number)
    return found, damaged, texts


# The edits of lines no forget wrote itself: written back from the journal, carried by a restore.
NOT_A_FORGET = frozenset({"journal", "restore"})


def vouched(data: bytes, own_texts: set[Forgot]) -> frozenset[str]:
    """The session keys whose every line in the file shares its edit and time with a digest line
    (the forget that listed the key wrote the digests of what it took)."""
    forgets = {(f.edit, f.time) for f in own_texts if f.edit not in NOT_A_FORGET}
    vouched: set[str] = set()
    unvouched: set[str] = set()
    for raw in data.split(b"\n"):
        if b'"key"' not in raw:
            continue
        value = loads_or_none(raw)
        key = value.get("key") if isinstance(value, dict) else None
        if not (isinstance(key, str) and key.startswith("session:") and KEY.match(key)):
            continue
        line = (value.get("edit"), value.get("time"))
        (vouched if line in forgets else unvouched).add(key)
    return frozenset(vouched - unvouched)
