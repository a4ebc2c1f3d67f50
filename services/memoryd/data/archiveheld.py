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
- a memory file (.md): the text's bytes anywhere in it (also with CRLF line ends, as a hand edit
  may save it);
- any other member, a line at a time (JSON lines: the journal, the recall log, pending writes,
  session logs): a string value anywhere in the line that is the text, or, held as JSON text in a
  string (a tool call's arguments), one in that, or a tool call whose "name arguments" (its row
  in the index) is; a line that is not JSON holds it when it holds
  the text's bytes or its longest run of characters no JSON writer escapes (a damaged line may
  hold it in any escaping). A line without that run holds no form of the text and is not parsed,
  which keeps the read cheap.
"""

import json
import logging
import os
import re
import stat
import tarfile
import zlib
from pathlib import Path

from memoryd.data import layout
from memoryd.home import Home
from proto.backupformat import MANIFEST, unpacked_max
from proto.trim import trim

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
        budget = unpacked_max(st.st_size)
        with tarfile.open(path, "r:gz") as tar:
            for member in tar:
                budget -= member.size
                if budget < 0:
                    return True  # past what a memoryd archive unpacks to: not read through
                if not member.isfile() or member.name == MANIFEST:  # names and counts only
                    continue
                got = tar.extractfile(member)
                if got is None:
                    continue
                with got:
                    if _member_holds(got, member.name.endswith(".md"), texts):
                        return True
    except (OSError, EOFError, zlib.error, tarfile.TarError) as e:
        log.info("%s: cannot be read through (%s): named as one that may hold the text", path, e)
        return True
    return False


def _member_holds(got, whole: bool, texts: list[str]) -> bool:
    if whole:  # a memory file: bounded by the archive's own bound
        data = got.read()
        return any(_raw_in(data, t) for t in texts)
    runs = [_run(t) for t in texts]
    left = b""
    while chunk := got.read(CHUNK):
        lines = (left + chunk).split(b"\n")
        left = lines.pop()
        if any(_line_holds(line, texts, runs) for line in lines):
            return True
    return bool(left) and _line_holds(left, texts, runs)


def _raw_in(data: bytes, text: str) -> bool:
    raw = text.encode()
    return raw in data or raw.replace(b"\n", b"\r\n") in data


def _run(text: str) -> bytes:
    """The longest run of the text's characters that every JSON form of it holds as they are."""
    return max(UNESCAPED.findall(text), key=len, default="").encode()


def _line_holds(line: bytes, texts: list[str], runs: list[bytes]) -> bool:
    if not any(run in line for run in runs):
        return False
    try:
        value = json.loads(line)
    except ValueError:  # not JSON (damaged, or not a log): its bytes are all there is
        return any(
            run and run in line or _raw_in(line, t) for t, run in zip(texts, runs, strict=True)
        )
    return _value_holds(value, texts, 0)


def _value_holds(value: object, texts: list[str], depth: int) -> bool:
    if isinstance(value, str):
        if any(trim(value) == t for t in texts):
            return True
        inner = value.strip()
        if depth < 4 and inner[:1] in ("{", "["):  # JSON held as text: a tool call's arguments
            try:
                return _value_holds(json.loads(inner), texts, depth + 1)
            except ValueError:
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
