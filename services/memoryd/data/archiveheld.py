"""Which archives in backups/ may still hold a text a forget took: those its answer names.

A forget leaves the archives in backups/ as they are (the owner's to keep or remove: one may be
his only backup), and its answer tells him which may still hold the text, to remove them if he
wants it gone there too. Naming every archive would have him delete good backups made before the
text was ever written, so each is read (streamed a member at a time, and left at the first sign
of the text) and named only when it may hold it. Never one missed: an archive that cannot be read
through (damaged, not a tar.gz, past the bounds a memoryd archive keeps, not a regular file) is
named too, as nothing tells that it does not hold it.

What counts as holding it, a superset of what forget takes (matching.py: a value that is the text,
surrounding white space aside), so that no archive holding it is left out:
- a memory file (.md): an entry of memory.md or user.md, or a note of notes.md, that is the text,
  read as memoryd reads them; any other, or one memoryd would refuse, when it holds the text's
  bytes (also with CRLF line ends, as a hand edit may save it);
- any other member, a line at a time (JSON lines: the journal, the recall log, pending writes,
  session logs): a string value anywhere in the line that is the text, or, held as JSON text in a
  string (a tool call's arguments), one in that, or a tool call whose "name arguments" (its row
  in the index) is. A line is parsed only when its bytes may hold the text as a whole string
  (_Sought), which keeps the read cheap when the text is a common word of longer ones; such a
  line that is not JSON (damaged, torn) is taken as holding it.
"""

import json
import logging
import os
import re
import stat
import tarfile
import zlib
from collections.abc import Mapping
from pathlib import Path

from memoryd.data import layout, notestream
from memoryd.errors import FileDamaged
from memoryd.home import Home
from memoryd.memory import entries
from proto import jsonread
from proto.backupformat import MANIFEST, MANIFEST_MAX, declared_in, too_much, unpacked_max
from proto.trim import WHITE_SPACE, trim

log = logging.getLogger(__name__)

ARCHIVE_END = ".tar.gz"
CHUNK = 1 << 20
# Characters no JSON writer escapes (some escape / and the HTML-unsafe <>&' too, so not those);
# not the space either, which joins a tool call's name to its arguments in the index's row, where
# the log holds them apart.
UNESCAPED = re.compile(r"[A-Za-z0-9!#$%()*+,\-.:;=?@\[\]^_`{|}~]+")


def holding(home: Home, texts: list[str]) -> list[str]:
    """The names of the archives in backups/ that may hold one of texts, sorted."""
    wanted = [t for t in (trim(t) for t in texts) if t]
    folder = layout.backups(home)
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(ARCHIVE_END))
    except OSError:  # no backups/: no archive
        return []
    if not wanted:
        return []
    return [name for name in names if _may_hold(folder / name, wanted)]


def _may_hold(path: Path, texts: list[str]) -> bool:
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):  # a link or other: not read, so it may hold it
            return True
        budget = None
        with tarfile.open(path, "r:gz") as tar:
            for member in tar:
                if budget is None:  # the first header: the archive declares its size, or not
                    budget = _budget(path, tar.pax_headers, st.st_size)
                    if budget is None:
                        return True  # declares more than restore would take: not read through
                budget -= member.size
                if budget < 0:
                    return True  # past what a memoryd archive unpacks to: not read through
                if not member.isfile() or member.name == MANIFEST:  # names and counts only
                    continue
                got = tar.extractfile(member)
                if got is None:
                    continue
                with got:
                    if member.name.rpartition("/")[2] == "notes.md":  # no limit: a note at a time
                        if _notes_hold(got, texts):
                            return True
                    elif member.name.endswith(".md"):  # a memory file: bounded by the budget
                        if _memory_file_holds(member.name, got.read(), texts):
                            return True
                    elif _member_holds(got, texts):
                        return True
    except (OSError, EOFError, zlib.error, tarfile.TarError) as e:
        log.info("%s: cannot be read through (%s): named as one that may hold the text", path, e)
        return True
    return False


def _budget(path: Path, pax_headers: Mapping[str, str], size: int) -> int | None:
    """What the members of the archive at path, size bytes, may hold in all, as restore reads
    it (proto/backupformat.py): what it declares, and its manifest; or, declaring nothing, RATIO
    times its size. None when restore would refuse the declaration."""
    try:
        declared = declared_in(pax_headers)
        st = os.statvfs(path.parent)
    except (ValueError, OSError):
        return None
    if declared is None:
        return unpacked_max(size)
    if too_much(declared, size, st.f_bavail * st.f_frsize) is not None:
        return None
    return declared + MANIFEST_MAX


def _memory_file_holds(name: str, data: bytes, texts: list[str]) -> bool:
    """Read as memoryd reads it: the entries of memory.md and user.md, each whole (notes.md's
    notes, whose lines starting with the header's mark are stuffed: _notes_hold); any other
    file, or one memoryd would refuse, by its bytes."""
    base = name.rpartition("/")[2]
    values: list[str] | None = None
    if base in ("memory.md", "user.md"):
        try:
            values = entries.parse(entries.decode(data, base))
        except FileDamaged:  # not UTF-8, or past the limit: not parsed
            values = None
    if values is None:
        return any(_raw_in(data, t) for t in texts)
    return any(trim(v) == t for v in values for t in texts)


def _notes_hold(got, texts: list[str]) -> bool:
    """Whether a note of the archive's notes.md (the member open as got) is one of texts, read
    as memoryd reads it, a note at a time (notestream.py): notes.md has no limit."""
    notes_read = notestream.entries(notestream.file_chunks(got))
    return any(trim(note.text) == t for note in notes_read for t in texts)


def _member_holds(got, texts: list[str]) -> bool:
    sought = [_Sought(t) for t in texts]
    left = b""
    while chunk := got.read(CHUNK):
        block = left + chunk
        cut = block.rfind(b"\n") + 1
        block, left = block[:cut], block[cut:]
        if _block_holds(block, texts, sought):
            return True
    return bool(left) and _block_holds(left, texts, sought)


def _block_holds(block: bytes, texts: list[str], sought: list["_Sought"]) -> bool:
    """Whether a line of block (whole lines, or the member's last bytes) holds one of texts: only
    the lines whose bytes may hold it are parsed, found in the block as a whole, not a line at a
    time, so that a member holding the text as a word of longer ones is read quickly."""
    lines: set[int] = set()  # where each line to parse starts
    for one in sought:
        if one.run in block:
            lines.update(one.lines_in(block))
    for start in sorted(lines):
        end = block.find(b"\n", start)
        line = block[start:] if end == -1 else block[start:end]
        try:
            if _value_holds(jsonread.loads(line), texts, 0):
                return True
        except (jsonread.NotJson, RecursionError):
            # Not JSON (damaged, torn), or nested deeper than the walk of its values goes (the
            # parser's depth, less the walk's own frames): it may hold it in some form.
            return True
    return False


def _line_start(block: bytes, at: int) -> int:
    return block.rfind(b"\n", 0, at) + 1


def _line_of(block: bytes, at: int) -> bytes:
    start = _line_start(block, at)
    end = block.find(b"\n", at)
    return block[start:] if end == -1 else block[start:end]


def _raw_in(data: bytes, text: str) -> bool:
    raw = text.encode()
    return raw in data or raw.replace(b"\n", b"\r\n") in data


# White space trim takes that a JSON string may hold as it is (the rest it escapes: \t \n \r \f
# as backslash and letter, backslashes doubling at each depth of JSON held as text in a string).
RAW_WS = tuple(c.encode() for c in WHITE_SPACE if c not in "\t\n\r\x0b\x0c")
SHORT_WS = b"ntrf"
NESTED = 4  # depths of JSON held as text in a string looked through
# What only an escaping other than the short one may hide a text behind (\u0041, \/).
OTHER_ESCAPES = (b"\\u", b"\\/")


class _Sought:
    """How a line is told cheaply to hold no JSON string that is the text: run, the longest run
    of its characters every JSON form of it holds as they are (a line without it holds none);
    cores, the text in the short escaping memoryd and loopd write (json.dumps, ensure_ascii off)
    at each depth of JSON held as text, and so the arguments of a tool call whose "name
    arguments" it is, each to be found quoted, white space aside. A line with no such core nor
    another escaping (whose forms are too many to list) cannot hold it and is not parsed, unless
    it is cut short and holds the text unquoted."""

    def __init__(self, text: str) -> None:
        self.run = max(UNESCAPED.findall(text), key=len, default="").encode()
        whole = [text]
        _, space, arguments = text.partition(" ")
        if space and arguments.lstrip()[:1] in ("{", "["):
            whole.append(arguments)
        cores: list[bytes] = []
        for core in whole:
            for _ in range(NESTED):
                core = json.dumps(core, ensure_ascii=False)[1:-1]
                cores.append(core.encode())
        self.loose = cores[0]
        self.cores = list(dict.fromkeys(cores))  # a text nothing escapes is one core

    def lines_in(self, block: bytes) -> set[int]:
        """Where the lines of block that may hold the text start."""
        found = set()
        for core in self.cores:
            at = block.find(core)
            while at != -1:
                if _quote_before(block, at) and _quote_after(block, at + len(core)):
                    found.add(_line_start(block, at))
                at = block.find(core, at + 1)
        for escape in OTHER_ESCAPES:
            at = block.find(escape)
            while at != -1:
                start = _line_start(block, at)
                if self.run in _line_of(block, at):
                    found.add(start)
                at = block.find(b"\n", at)  # the next line
                at = -1 if at == -1 else block.find(escape, at)
        at = block.find(self.loose)
        while at != -1:
            # a line cut short (a write torn by a crash) may end inside the string holding it
            if not _line_of(block, at).rstrip().endswith(b"}"):
                found.add(_line_start(block, at))
            at = block.find(self.loose, at + 1)
        return found


def _quote_before(line: bytes, i: int) -> bool:
    while i > 0:
        if line[i - 1] == 0x22:  # "
            return True
        if i >= 2 and line[i - 1] in SHORT_WS and line[i - 2] == 0x5C:  # \n and the like
            i -= 2
            while i > 0 and line[i - 1] == 0x5C:
                i -= 1
            continue
        raw = next((w for w in RAW_WS if line.endswith(w, 0, i)), None)
        if raw is None:
            return False
        i -= len(raw)
    return False


def _quote_after(line: bytes, i: int) -> bool:
    while i < len(line):
        if line[i] == 0x22:
            return True
        if line[i] == 0x5C:  # backslashes, then a quote or a short white space escape
            j = i
            while j < len(line) and line[j] == 0x5C:
                j += 1
            if j < len(line) and line[j] == 0x22:
                return True
            if j < len(line) and line[j] in SHORT_WS:
                i = j + 1
                continue
            return False
        raw = next((w for w in RAW_WS if line.startswith(w, i)), None)
        if raw is None:
            return False
        i += len(raw)
    return False


def _value_holds(value: object, texts: list[str], depth: int) -> bool:
    if isinstance(value, str):
        if any(trim(value) == t for t in texts):
            return True
        inner = value.strip()
        if depth < 4 and inner[:1] in ("{", "["):  # JSON held as text: a tool call's arguments
            try:
                return _value_holds(jsonread.loads(inner), texts, depth + 1)
            except jsonread.NotJson:
                return False
        return False
    if isinstance(value, dict):
        name, arguments = value.get("name"), value.get("arguments")
        if isinstance(name, str) and isinstance(arguments, str):
            # a tool call, whose row in the index is "name arguments" (sessionrows.py)
            if any(trim(f"{name} {arguments}") == t for t in texts):
                return True
        return any(_value_holds(v, texts, depth) for v in value.values())
    if isinstance(value, list):
        return any(_value_holds(v, texts, depth) for v in value)
    return False
