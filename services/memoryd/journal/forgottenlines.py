"""memory/forgotten.jsonl read a block of whole lines at a time (boundedfile.Lines), never whole.

What forgottenparse gives of the file's bytes (the keys, the digests, the damaged lines, the
session keys their forget vouched for), given of a file that may be far larger than memoryd makes
it: read whole, a gigabyte of NUL bytes a damaged disk left there stopped memoryd's start. A line
longer than any memoryd writes is damaged, as a line that does not parse is: nothing un-forgets a
key, as the journal's forget lines' keys are always taken beside the file's.

vouched needs every digest of the file before it looks at a key line, so the file is read twice,
the second time through the same descriptor over the same whole lines (so in the same blocks).
"""

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.home import open_read
from memoryd.journal.boundedfile import Lines
from memoryd.journal.forgottenparse import Forgot, parse_whole, vouched


@dataclass
class Parsed:
    found: set[str] = field(default_factory=set)
    damaged: list[int] = field(default_factory=list)  # line numbers, from 1
    texts: set[Forgot] = field(default_factory=set)
    vouched: frozenset[str] = frozenset()


def read(where: Path) -> Parsed:
    """The file's lines parsed; OSError (FileNotFoundError) as its open raises it."""
    out = Parsed()
    with open_read(where) as f:
        size = f.seek(0, 2)
        f.seek(0)
        lines = Lines(f, size)
        has: Counter[str] = Counter()  # in how many blocks each session key has a line
        for first, block in lines:
            found, damaged, texts = parse_whole(block)
            out.found |= found
            out.texts |= texts
            out.damaged += [first + n - 1 for n in damaged]
            has.update(k for k in found if k.startswith("session:"))
        last = lines.rest
        if last:  # a last line without its newline is read as a line, as the whole file's was
            found, damaged, texts = parse_whole(last)
            out.found |= found
            out.texts |= texts
            out.damaged += [lines.after + n - 1 for n in damaged]
        out.damaged = sorted(out.damaged + lines.long)
        f.seek(0)
        out.vouched = _vouched(Lines(f, lines.through), last, out.texts, has)
    return out


def _vouched(lines: Lines, last: bytes, texts: set[Forgot], has: Counter[str]) -> frozenset[str]:
    """The session keys every line of which, in every block, is vouched for: a key vouched for in
    each block it has a line in (a block's vouched leaves out a key any of its lines is not)."""
    counts: Counter[str] = Counter()
    for _, block in lines:
        counts.update(vouched(block, texts))
    if last:
        has = has + Counter(k for k in parse_whole(last)[0] if k.startswith("session:"))
        counts.update(vouched(last, texts))
    return frozenset(k for k, n in counts.items() if n == has[k])
