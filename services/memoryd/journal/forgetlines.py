"""The journal's forget lines, as forgotten.py falls back on them: the keys each names, the digests
of the texts it forgot, and the lines written before forget lines held their keys, which name
none; and the mending of forgotten.jsonl from them, when a line of it is damaged or it is missing.

A digest (Forgot) is the sha256 of a forgotten text, trimmed as forget compares texts
(matching.same, proto.trim: Unicode White_Space only): what lets a restore or an import recognise
text the owner made memoryd forget, which memoryd keeps no copy of. It is a digest, not the text;
but a short text's digest can be found by trying every text it might be, so it is only where
forgotten keys are (forgotten.jsonl, the journal's forget lines, and index/journal-forgets.json,
the saved reading of those lines), never in the marker that stands where the text was.

forgotten.jsonl is the list the indexer skips; each forget's journal line names the keys it listed
too, so that a damaged or missing forgotten.jsonl can be mended from the journal. A home where
nothing was ever forgotten has no forgotten.jsonl, and that file is looked for at every recall: so
the months unchanged cost a stat each, and a month that changed is read only from where it was
read to (in the common case this month, after a write: what the write appended). forgetread.py
keeps that reading, and saves it so that a start reads only what was appended since the last.
"""

import datetime as dt
import hashlib
import json
import os
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.home import append_line, create_if_missing
from proto import jsonread
from proto.plural import counted
from proto.trim import trim

KEY = re.compile(r"^(?:note:[0-9]{1,9}|session:[^:\s]{1,128}:[0-9]{1,12})\Z")
LINE_ID = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9]{4,9}\Z")
DIGEST = re.compile(r"^[0-9a-f]{64}\Z")

Stamp = tuple[int, int, int]


@dataclass(frozen=True)
class Forgot:
    """A text one forget took, by its digest; two forgets of the same text are two, so that a
    restore can tell a forget its archive already holds from one made after it. The time is only
    to the minute, so the forget's journal line is part of what tells them apart: a text forgotten,
    written again and forgotten again within one minute is two forgets."""

    digest: str
    time: str  # the forget's, to the minute
    edit: str = ""  # the forget's journal line

    def line(self) -> dict:
        return {"digest": self.digest, "time": self.time, "edit": self.edit or "journal"}


def digest(text: str) -> str:
    """The digest of a text as forget compares texts: surrounding White_Space aside (trim). For
    every text str.strip() trims the same way (all but those with U+001C..U+001F at an edge) it
    is the digest a memoryd that trimmed with str.strip() listed."""
    return _sha256(trim(text))


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def digests_of(text: str) -> tuple[str, ...]:
    """Every digest a forget may have listed text by: its digest, and for a text with U+001C..
    U+001F at an edge (a session record's content, a recall query, a pending write's argument:
    nothing refused them there) also the digest of text cut by str.strip(), which an older
    memoryd listed for it, so that what it forgot stays forgotten. That older digest is also the
    digest of the text without them, so a forget of that text keeps this one out as well, as
    it always did."""
    first = digest(text)
    stripped = text.strip()
    return (first,) if stripped == trim(text) else (first, _sha256(stripped))


def text_listed(text: str, digests: Collection[str]) -> bool:
    """True when digests hold one of text's digests (digests_of)."""
    return any(d in digests for d in digests_of(text))


def forgot_of(value: object) -> Forgot | None:
    """A forgotten.jsonl line's digest ({"digest", "time", "edit"}), or None."""
    if not isinstance(value, dict):
        return None
    found, when, edit = value.get("digest"), value.get("time"), value.get("edit")
    if not (isinstance(found, str) and DIGEST.match(found) and isinstance(when, str)):
        return None
    return Forgot(found, when[:32], edit if isinstance(edit, str) else "")


@dataclass(frozen=True)
class Forgets:
    keys: frozenset[str]
    # The ids of forget lines that name no key: an older memoryd's, whose forget lines held only
    # the id the owner gave (memory.md:2 is no key), so the journal cannot tell what they listed.
    keyless: tuple[str, ...]
    # The newest forget line's keys: a forget writes its journal line first, then its keys to
    # forgotten.jsonl, so these alone missing from the file may be a forget under way.
    last: frozenset[str] = frozenset()
    texts: frozenset[Forgot] = frozenset()  # the digests of the texts they forgot
    last_texts: frozenset[Forgot] = frozenset()  # the newest forget line's

    def newest(self) -> frozenset[Forgot]:
        """The digests of every journal line of the newest forget, not only its last line's: a
        forget of a text held in memory.md and user.md writes a line per file, each with the
        forget's time and digests (and the same keys), and lists them in forgotten.jsonl only
        after the last; so while it runs, all of them may be missing from the file."""
        if not self.last_texts:
            return frozenset()
        same = {(f.digest, f.time) for f in self.last_texts}
        return frozenset(f for f in self.texts if (f.digest, f.time) in same)


NONE = Forgets(frozenset(), ())
SAID_MOST = 5


def stamp(where: Path) -> Stamp | None:
    try:
        st = os.stat(where, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def parse(data: bytes) -> Forgets:
    """The forget lines of a month's bytes."""
    if b'"forgot"' not in data:  # the common month: one search, no line split
        return NONE
    keys: set[str] = set()
    texts: set[Forgot] = set()
    keyless: list[str] = []
    last: list[str] = []
    last_texts: list[Forgot] = []
    for raw in data.split(b"\n"):
        if b'"forgot"' not in raw:
            continue
        line = forget_line(raw)
        if line is None:
            continue
        last, ident, last_texts, named = line
        keys.update(last)
        texts.update(last_texts)
        if not last and not named:
            keyless.append(ident)
    return made(keys, keyless, frozenset(last), texts, frozenset(last_texts))


def made(keys, keyless, last, texts, last_texts) -> Forgets:
    if not (keys or keyless or texts):
        return NONE
    return Forgets(frozenset(keys), tuple(keyless), last, frozenset(texts), last_texts)


def forget_line(raw: bytes) -> tuple[list[str], str, list[Forgot], bool] | None:
    """A forget line's keys, its id (a journal id, or "?" when it holds none), the digests of
    the texts it forgot, and whether it names its keys (a forget of an entry that no record held
    lists none, and is not keyless); None for any other line."""
    try:
        value = jsonread.loads(raw)
    except ValueError:  # NotJson: not JSON, or nested past the parser's depth
        return None
    forgot = value.get("forgot") if isinstance(value, dict) else None
    if not isinstance(forgot, dict) or value.get("action") != "forget":
        return None
    named = forgot.get("keys")
    listed = isinstance(named, list)
    if not isinstance(named, list):
        named = [forgot.get("id")]
    ident = value.get("id")
    ident = ident if isinstance(ident, str) and LINE_ID.match(ident) else "?"
    at, found = forgot.get("at"), forgot.get("digests")
    texts: list[Forgot] = []
    if isinstance(at, str) and isinstance(found, list):
        texts = [Forgot(d, at[:32], ident) for d in found if isinstance(d, str) and DIGEST.match(d)]
    # A restore's line lists the digests it carried over from the home as they were listed
    # ({"digest", "time", "edit"}): each stays the forget it was, not one made at the restore.
    carried = forgot.get("carried")
    if isinstance(carried, list):
        texts += [f for f in map(forgot_of, carried) if f is not None]
    return [k for k in named if isinstance(k, str) and KEY.match(k)], ident, texts, listed


def write_back(
    where: Path, exists: bool, keys: list[str], texts: list[Forgot] | None = None
) -> str | None:
    """Append keys and digests to forgotten.jsonl, each on a line of its own (a missing file is
    made whole or not at all, never left empty). The error that stopped it, or None. A digest
    keeps its forget's time: that, with the digest, is what tells two forgets apart."""
    when = f"{dt.datetime.now(dt.UTC):%Y-%m-%dT%H:%MZ}"
    rows = [{"key": key, "time": when, "edit": "journal"} for key in keys]
    rows += [forgot.line() for forgot in texts or []]
    lines = "\n".join(json.dumps(row) for row in rows)
    try:
        if exists or not create_if_missing(where, (lines + "\n").encode()):
            append_line(where, lines)
    except OSError as e:
        return e.strerror or str(e)
    return None


def written_back(written: int, error: str | None, digests: int = 0) -> str:
    """written keys and digests: the digests are said apart."""
    if error is not None:
        return f" (they could not be written back to it: {error}; the journal keeps them meanwhile)"
    if not written:
        return " (written back to it at the next forget or start)"
    also = f", and {counted(digests, 'digest')} of forgotten text" if digests else ""
    return f" ({counted(written - digests, 'key')} it lacked written back to it{also})"


def keyless(ids: tuple, missing: bool) -> str:
    """What the journal cannot give back: forget lines an older memoryd wrote name no keys."""
    if not ids:
        return ""
    named = ", ".join(ids[:SAID_MOST])
    more = f" and {len(ids) - SAID_MOST:,} more" if len(ids) > SAID_MOST else ""
    one = len(ids) == 1
    held = "" if missing else " unless this file still holds their keys on whole lines"
    return (
        f"; forget line{'' if one else 's'} {named}{more} of the journal (written before forget "
        f"lines named their keys) name{'s' if one else ''} no key, so the records "
        f"{'it' if one else 'they'} forgot may be indexed again{held}: if a search finds that "
        "text, forget it again by its exact words"
    )


@dataclass
class Found:
    """What the forget lines of a month's whole lines name, as parse() folds them."""

    keys: set[str] = field(default_factory=set)
    texts: set[Forgot] = field(default_factory=set)
    keyless: list[str] = field(default_factory=list)
    last: frozenset[str] = frozenset()
    last_texts: frozenset[Forgot] = frozenset()

    def take(self, raw: bytes) -> None:
        line = forget_line(raw)
        if line is None:
            return
        keys, ident, texts, named = line
        self.keys.update(keys)
        self.texts.update(texts)
        if not keys and not named:
            self.keyless.append(ident)
        self.last, self.last_texts = frozenset(keys), frozenset(texts)

    def copy(self) -> "Found":
        return Found(
            set(self.keys), set(self.texts), list(self.keyless), self.last, self.last_texts
        )

    def answer(self) -> Forgets:
        return made(self.keys, self.keyless, self.last, self.texts, self.last_texts)


@dataclass
class Month:
    """What forgetread.py read of one month file (saved by forgetsaved.py), and how far."""

    inode: int
    offset: int  # the bytes of whole lines read
    tail: str  # the sha256 of the TAIL_CHECK bytes before offset
    found: Found
    stamp: Stamp | None = None  # the file's stat answer is for (None: not looked at yet)
    answer: Forgets = NONE  # found, and the line after offset
    seen: tuple[int, int] | None = None  # the file's size and mtime when it was read
