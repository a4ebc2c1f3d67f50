"""A forgotten text kept out of the index however [index] max_record_bytes cuts it later.

The index keeps the first max_record_bytes of a record's text, and a forget lists the digest of the
text as the index held it then (forgetlines.digest). The owner may change the cap afterwards
(config.py takes 1024 to 1 GiB): the same text said again is then cut elsewhere, shorter or longer,
and its digest is no longer the one listed. memoryd keeps no copy of what it forgot, so a forget
also lists, for a text of at least LEAST_CUT bytes, the digests of its first LEAST_CUT, 2 x
LEAST_CUT, 4 x LEAST_CUT ... bytes up to the text's own length (cuts(): each cut on a character,
trimmed as the digest trims, and hashed after a tag of their own, so that a rung is never taken for
a whole text nor a whole text for a rung), among its other digests: the journal's forget line and
forgotten.jsonl carry them as they carry those, and a restore or a mend passes them on unread. A row
the indexer reads is left out (listed()):

- when it was cut by the cap now in force and its longest such prefix is listed: it is a forgotten
  text cut at a lower cap than the forget's, and at least half of what the index would keep of it
  is the forgotten text's own;
- when it begins with a whole forgotten text (any length from LEAST_CUT): the text cut at a higher
  cap than the forget's, or not cut now. The longest listed prefix tells the forgotten text's
  length to within a factor of two; its exact length is listed too, as digests tagged with that
  rung's digest, one for each of the length's leading bits (lengths(): the bits of the length down
  to each, so that texts sharing the rung each keep their own), read off in a few dozen small
  hashes, and the row's prefix of that length hashed once. A row that is a near copy of a long
  forgotten text (a page fetched again) so costs as many hashes as any other row, not one for
  every character past the rung. A forget line written before lengths were listed lists none: for
  its texts the prefixes up to the next rung are hashed, as then (only for a row whose first
  LEAST_CUT bytes are already a forgotten text's).

Why a ladder and not one digest of the first LEAST_CUT bytes: two different texts often share
their first kilobyte (a template, a letterhead, the same site's page fetched twice), and a single
head digest would keep every later text with that beginning out of the index for good. With the
ladder, a row goes only when everything memoryd can compare is the forgotten text's: the whole
forgotten text at its start, or, for a row the cap cut, at least half of what it keeps. What still
goes is what memoryd cannot tell from the forgotten text cut at another cap: a text that begins with
a whole forgotten text of LEAST_CUT bytes or more, and a row cut by the cap whose longest rung
prefix is a forgotten text's. A whole row shorter than a forgotten text is never left out by these
(the same text said again is never shorter than a cut of it), nor is a text under LEAST_CUT bytes:
those match exactly, as they always did (but for a tool call's argument the cap cut: a row of
"name {arguments}" cut at 1024 bytes holds less than LEAST_CUT of its text, so a forget lists the
text's first ARGUMENT_CUT bytes too, and an argument cut short at least that long whose first
ARGUMENT_CUT bytes are those goes). Forget lines written before these digests were listed
hold only the text's own digest: they keep out what they always did (exact text; under a listed
key, keptout._extends), no more.
"""

import hashlib
from collections.abc import Collection

from memoryd.journal.forgetlines import digest
from proto.trim import WHITE_SPACE, trim

# The least max_record_bytes the configuration takes (config.py), less the bytes of a character
# cut in two: no cap cuts a text shorter.
LEAST_CUT = 1024 - 3
# The most max_record_bytes takes: no rung past it is ever needed.
MOST_CUT = 1 << 30
# A tool call's row is its name and its arguments' JSON: a cap of 1024 cuts a text written as an
# argument shorter than LEAST_CUT. A forget lists a rung of half that too, which only a cut
# argument is checked against (listed(): under LEAST_CUT, cut, at least this long).
ARGUMENT_CUT = LEAST_CUT // 2


def _encoded(text: str) -> bytes:
    return trim(text).encode("utf-8", "surrogatepass")


def _rungs(size: int) -> list[int]:
    """The rung lengths at most size bytes: LEAST_CUT, doubled until past size (or MOST_CUT)."""
    out, rung = [], LEAST_CUT
    while rung <= min(size, MOST_CUT):
        out.append(rung)
        rung *= 2
    return out


def _cut(data: bytes, size: int) -> bytes:
    """The first size bytes of data's UTF-8, less a character cut in two."""
    if size >= len(data):
        return data
    while size > 0 and data[size] & 0xC0 == 0x80:
        size -= 1
    return data[:size]


# What a rung's digest hashes before the prefix: a rung is never taken for a whole text (a text
# of exactly a rung's length is listed by both), and a whole text never for a rung.
_RUNG = b"memoryd forgotten text, cut\0"


def _rung_digest(data: bytes) -> str:
    """The digest of a rung prefix (data, cut on a character), trimmed as digest() trims."""
    text = trim(data.decode("utf-8", "surrogatepass")).encode("utf-8", "surrogatepass")
    return hashlib.sha256(_RUNG + text).hexdigest()


def cuts(text: str) -> list[str]:
    """The digests of text's rung prefixes (trimmed, cut on a character) and of its length
    (lengths()), for a forget to list beside its digest; none for a text under LEAST_CUT bytes."""
    data = _encoded(text)
    rungs = _rungs(len(data))
    out = [_rung_digest(_cut(data, rung)) for rung in rungs]
    if rungs:
        out += _lengths(out[-1], rungs[-1], len(data))
        out.append(_rung_digest(_cut(data, ARGUMENT_CUT)))
    return list(dict.fromkeys(out))


# What a length's digest hashes first: never taken for a text's or a rung's.
_LENGTH = b"memoryd forgotten text, length\0"


def _bits(rung: int) -> int:
    """How many bits a length of a text whose longest rung is rung takes (under 2 x rung)."""
    return (2 * rung).bit_length()


def _length_digest(rung_digest: str, bit: int, leading: int) -> str:
    """The digest of a length's bits from bit up (leading), under its longest rung's digest."""
    return hashlib.sha256(_LENGTH + f"{rung_digest}:{bit}:{leading}".encode()).hexdigest()


def _lengths(rung_digest: str, rung: int, size: int) -> list[str]:
    """The digests that tell a text's length (size) to one who holds its longest rung prefix (of
    rung bytes, whose digest is rung_digest): for each bit, the length's bits from it up."""
    bits = _bits(rung)
    if size.bit_length() > bits:  # past MOST_CUT's rung: the prefixes are hashed instead
        return []
    return [_length_digest(rung_digest, bit, size >> bit) for bit in reversed(range(bits))]


# Texts of one longest rung prefix whose lengths are followed at most: past it, the prefixes
# are hashed instead.
MOST_LENGTHS = 64


def _listed_lengths(rung_digest: str, rung: int, digests: Collection[str]) -> list[int] | None:
    """The lengths listed under a rung prefix's digest (lengths()), or None when none is (a
    forget line written before they were listed) or more than MOST_LENGTHS are."""
    bits = _bits(rung)
    found = [0]
    for bit in reversed(range(bits)):
        found = [
            leading
            for high in found
            for leading in (high * 2, high * 2 + 1)
            if _length_digest(rung_digest, bit, leading) in digests
        ]
        if not found or len(found) > MOST_LENGTHS:
            return None
    return found


def listed(row: str, digests: Collection[str], cut: bool) -> bool:
    """True when row is a forgotten text as another max_record_bytes cuts it (the module's
    docstring): cut, whether the cap now in force cut the row."""
    if not digests:
        return False
    data = _encoded(row)
    rungs = _rungs(len(data))
    if not rungs:
        # an argument of a call the cap cut, under LEAST_CUT: half of it at least the text's
        return (
            cut and len(data) >= ARGUMENT_CUT and _rung_digest(_cut(data, ARGUMENT_CUT)) in digests
        )
    # The rungs listed are the first ones, or none: a text listing a rung lists those below it.
    found: list[tuple[int, str]] = []
    for rung in rungs:
        rung_digest = _rung_digest(_cut(data, rung))
        if rung_digest not in digests:
            break
        found.append((rung, rung_digest))
    if not found:
        return False
    top, top_digest = found[-1]
    if cut and top == rungs[-1]:
        return True
    # The whole forgotten text at the row's start: its length is listed under the longest
    # listed rung, or, listed before lengths were, from that rung to the next one.
    sizes = _listed_lengths(top_digest, top, digests)
    if sizes is None:
        return _whole_prefix(data, len(_cut(data, top)), top * 2, digests)
    return any(_prefix_listed(data, size, digests) for size in sizes)


def _prefix_listed(data: bytes, size: int, digests: Collection[str]) -> bool:
    """Whether data's first size bytes, ending on a character, are a listed text."""
    if size > len(data) or len(_cut(data, size)) != size:
        return False
    return digest(data[:size].decode("utf-8", "surrogatepass")) in digests


def _whole_prefix(data: bytes, start: int, end: int, digests: Collection[str]) -> bool:
    """Whether a prefix of data from start to end bytes long (cut on a character) is a listed
    text, trimmed as digest() trims: the digest of each prefix past start that ends on a
    character that is not White_Space is taken from a copy of the running hash."""
    if digest(data[:start].decode("utf-8", "surrogatepass")) in digests:
        return True
    running = hashlib.sha256(data[:start])
    text = _cut(data, end)[start:].decode("utf-8", "surrogatepass")
    for char in text:
        running.update(char.encode("utf-8", "surrogatepass"))
        if char not in WHITE_SPACE and running.copy().hexdigest() in digests:
            return True
    return False
