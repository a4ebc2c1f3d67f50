"""Grants: the two built in, and the owner's, one TOML file per grant in grants/.

A grant file grants/<id>.toml holds tool, mode (auto, ask or deny), max_taint and result_class
(public, private or secret), untrusted (a boolean) and optionally constraints = {hosts, paths,
patterns}; its id is the file stem, its grant_sha256 the sha256 of the file's bytes. One bad file
makes the whole set invalid: every call is then denied, the memory tools included (grants-invalid).
A file naming recall or memory is such a problem, with spec 8's fixed sentence.

GrantSet.grants lists only the owner's grants; candidates() sees the built-ins too.
"""

import hashlib
import logging
import os
import re
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from brokerd_shim.builtin import BUILTIN_PREFIX, BUILTIN_TEXTS, MEMORY_TOOLS
from brokerd_shim.constraints import Constraints
from brokerd_shim.errors import GrantProblem
from proto.files import NotRegular, open_read, read_at_most
from proto.labels import DataClass, Label, is_class

log = logging.getLogger("brokerd_shim.grants")

BUILT_IN_POLICY = "the policy of recall and memory is built in; remove this grant"
GRANT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
TOOL_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
MODES = ("auto", "ask", "deny")
MAX_GRANT_BYTES = 65_536
MAX_CONSTRAINT_ITEMS = 100
_KEYS = {"tool", "mode", "max_taint", "result_class", "untrusted", "constraints"}
_REQUIRED = ("tool", "mode", "max_taint", "result_class", "untrusted")


@dataclass(frozen=True)
class Grant:
    id: str
    tool: str
    mode: str
    max_taint: DataClass
    result_class: DataClass
    untrusted: bool
    sha256: str
    constraints: Constraints = field(default_factory=Constraints)
    builtin: bool = False

    @property
    def label(self) -> Label:
        return Label(klass=self.result_class, untrusted=self.untrusted)


def _class(data: dict, key: str) -> DataClass:
    value = data[key]
    if not is_class(value):
        raise GrantProblem(f"{key} must be one of public, private, secret")
    return value


def _strings(table: dict, key: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if (
        not isinstance(value, list)
        or len(value) > MAX_CONSTRAINT_ITEMS
        or not all(isinstance(v, str) and 0 < len(v) <= 1000 for v in value)
    ):
        raise GrantProblem(
            f"constraints.{key} must be a list of at most {MAX_CONSTRAINT_ITEMS} non-empty strings"
        )
    return tuple(value)


def _constraints(data: dict) -> Constraints:
    table = data.get("constraints", {})
    if not isinstance(table, dict):
        raise GrantProblem("constraints must be a table of hosts, paths, patterns")
    unknown = sorted(set(table) - {"hosts", "paths", "patterns"})
    if unknown:
        raise GrantProblem(f"unknown constraint {unknown[0][:64]!r}")
    return Constraints(
        _strings(table, "hosts"), _strings(table, "paths"), _strings(table, "patterns")
    )


def parse_grant(grant_id: str, text: bytes, *, builtin: bool = False) -> Grant:
    """One grant from its id and its file's bytes; GrantProblem says what is wrong."""
    if len(text) > MAX_GRANT_BYTES:
        raise GrantProblem(f"the file is over {MAX_GRANT_BYTES} bytes")
    try:
        data = tomllib.loads(text.decode("utf-8-sig"))  # a byte-order mark is no mistake
    except UnicodeDecodeError:
        raise GrantProblem("the file is not UTF-8") from None
    except tomllib.TOMLDecodeError as e:
        raise GrantProblem(f"not valid TOML: {e}") from None
    except RecursionError:  # tomllib nests a frame a level: a small file can pass its limit
        raise GrantProblem("not valid TOML: its values are nested too deeply") from None
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise GrantProblem(f"unknown key {unknown[0][:64]!r}")
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise GrantProblem(f"missing key {missing[0]}")
    tool = data["tool"]
    if not isinstance(tool, str) or not TOOL_NAME.fullmatch(tool):
        raise GrantProblem("tool must be a tool name (lower-case letters, digits, _)")
    if tool in MEMORY_TOOLS and not builtin:
        raise GrantProblem(BUILT_IN_POLICY)
    if data["mode"] not in MODES:
        raise GrantProblem("mode must be one of auto, ask, deny")
    if not isinstance(data["untrusted"], bool):
        raise GrantProblem("untrusted must be true or false")
    constraints = _constraints(data)
    if tool in MEMORY_TOOLS and not constraints.empty:
        raise GrantProblem(f"{tool} takes no constraints")
    return Grant(
        id=grant_id,
        tool=tool,
        mode=data["mode"],
        max_taint=_class(data, "max_taint"),
        result_class=_class(data, "result_class"),
        untrusted=data["untrusted"],
        sha256=hashlib.sha256(text).hexdigest(),
        constraints=constraints,
        builtin=builtin,
    )


BUILTINS: tuple[Grant, ...] = tuple(
    parse_grant(grant_id, text.encode("utf-8"), builtin=True)
    for grant_id, text in BUILTIN_TEXTS.items()
)


@dataclass(frozen=True)
class GrantSet:
    grants: tuple[Grant, ...] = ()
    problems: tuple[str, ...] = ()
    builtins: tuple[Grant, ...] = BUILTINS

    @property
    def valid(self) -> bool:
        return not self.problems

    def candidates(self, tool: str) -> list[Grant]:
        """Every grant naming tool, built-ins first, then the owner's in id order."""
        return [g for g in (*self.builtins, *self.grants) if g.tool == tool]


def _load_file(entry: os.DirEntry) -> Grant:
    grant_id = entry.name[: -len(".toml")]
    if not GRANT_ID.fullmatch(grant_id):
        raise GrantProblem("the file name must be <id>.toml with an id of letters, digits, _ and -")
    if grant_id.startswith(BUILTIN_PREFIX):
        raise GrantProblem(f"grant ids beginning {BUILTIN_PREFIX} are reserved")
    # One open, never through a link and never waiting on a FIFO (the grants thread would hang,
    # and every call with it): what is read is what was checked to be a regular file.
    try:
        with open_read(entry.path) as f:
            text = read_at_most(f.fileno(), MAX_GRANT_BYTES + 1)
    except NotRegular as e:
        raise GrantProblem(e.strerror) from None
    except OSError as e:
        raise GrantProblem(f"cannot be read: {e.strerror}") from None
    return parse_grant(grant_id, text)


def load_grants(folder: Path) -> GrantSet:
    """The grant set of folder: every *.toml file in it (hidden files and others are ignored).
    The folder may be a link (the owner's setting names it); a file in it may not."""
    try:
        entries = sorted(
            (
                e
                for e in os.scandir(os.path.realpath(folder))
                if e.name.endswith(".toml") and not e.name.startswith(".")
            ),
            key=lambda e: e.name,
        )
    except OSError as e:
        return GrantSet(problems=(f"{folder}: cannot be read: {e.strerror}",))
    grants, problems = [], []
    for entry in entries:
        try:
            grants.append(_load_file(entry))
        except GrantProblem as e:
            problems.append(f"{entry.name[:80]}: {e}")
    return GrantSet(grants=tuple(grants), problems=tuple(problems))


# A folder or file changed this recently may change again within the same timestamp tick (coarse
# file system clocks), so a stat would not see it: such a set is rescanned in full on every call.
SETTLED_NS = 2_000_000_000


def _stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


@dataclass(frozen=True)
class FolderScan:
    """One listing of grants/: what it holds (signature) and the stats a cheap check compares."""

    signature: tuple
    folder: tuple[int, int, int, int]
    files: tuple[tuple[str, tuple[int, int, int, int]], ...]  # (path, stamp)
    newest_ns: int

    def unchanged(self, folder: Path) -> bool:
        """True when a stat of the folder and of each file listed shows none of them changed.

        A file added or removed changes the folder's stamp; a file rewritten in place changes its
        own. Nothing is listed and nothing is read.
        """
        try:
            if _stamp(os.stat(folder)) != self.folder:
                return False
            return all(_stamp(os.stat(path)) == stamp for path, stamp in self.files)
        except OSError:
            return False


def scan_folder(folder: Path) -> FolderScan | None:
    """The folder's listing with each entry's stat; None if the folder cannot be listed.

    The signature holds each stat's ctime as well as its mtime, size and inode: a chmod or chown
    changes only the ctime, and it can make a file brokerd-shim could not read readable (the fix
    an owner makes for "cannot be read") or the reverse, so the grants must be read again.
    """
    try:
        st = os.stat(folder)
        items: list = [(st.st_mtime_ns, st.st_ctime_ns, st.st_ino)]
        files = []
        newest = max(st.st_mtime_ns, st.st_ctime_ns)
        for e in os.scandir(folder):
            try:
                s = e.stat()
            except OSError:
                s = None
            items.append((e.name, s and _stamp(s)))
            if s is not None:
                files.append((e.path, _stamp(s)))
                newest = max(newest, s.st_mtime_ns, s.st_ctime_ns)
            else:
                newest = time.time_ns()  # a dangling entry: never trust a stat-only check
    except OSError:
        return None
    return FolderScan(tuple(sorted(items, key=repr)), _stamp(st), tuple(files), newest)


def folder_signature(folder: Path) -> tuple | None:
    """What changes when a file in folder is added, removed or rewritten; None if unreadable."""
    scan = scan_folder(folder)
    return None if scan is None else scan.signature


class GrantsWatcher:
    """The current grant set of a folder, reloaded only when its files change.

    A call first stats the folder and the files it held last time (no listing, no reading); only
    when one of them changed, or the last change is too recent to trust a stat (SETTLED_NS), is
    the folder listed again, and only when the listing differs are the grants parsed again. Not
    thread-safe: the broker calls it from one thread.
    """

    def __init__(self, folder: Path):
        self.folder = folder
        self._signature: tuple | None = ()
        self._settled: FolderScan | None = None
        self._set = GrantSet()

    def current(self) -> GrantSet:
        if self._settled is not None and self._settled.unchanged(self.folder):
            return self._set
        self._settled = None
        scan = scan_folder(self.folder)
        signature = None if scan is None else scan.signature
        if scan is not None and time.time_ns() - scan.newest_ns > SETTLED_NS:
            self._settled = scan
        if signature is None or signature != self._signature:
            previous, self._set = self._set, load_grants(self.folder)
            self._signature = signature
            if self._set == previous and signature is None:
                return self._set
            if self._set.valid:
                log.info("grants: %s: %d owner grants loaded", self.folder, len(self._set.grants))
            else:
                log.warning(
                    "grants: %s is invalid, every call is denied (runbook: grants-invalid): %s",
                    self.folder,
                    "; ".join(self._set.problems),
                )
        return self._set
