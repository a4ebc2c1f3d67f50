"""The fixture runtime: tools other than recall and memory answered from stored files.

It stands in for the containers brokerd would run, for tests and demos: an http_fetch of a URL is
answered with a page stored beforehand. {fixtures}/index.toml lists what is stored:

    [[fixture]]
    tool = "http_fetch"
    arguments = { url = "https://example.org/notes" }
    file = "example-org-notes.html"

A call is answered by the first fixture whose tool is the call's and whose arguments equal the
call's arguments (as JSON values). file is a plain file name in the fixtures folder, checked by
pattern: the call's arguments never form a path. The runtime adds no label (the grant's applies).

The folder is the home's, as grants/ is, and its files are read as grant files are: in one open,
never through a link, never waiting on a FIFO (the call's thread would never end, and brokerd-shim
would no longer stop on SIGTERM), a device or folder refused, at most a bound read. A file that
cannot be read so fails the call, with one line naming it. The folder itself may be a link.
"""

import asyncio
import errno
import logging
import os
import re
import tomllib
from pathlib import Path

from brokerd_shim.errors import ToolFailed
from brokerd_shim.runtime import RunSpec, Runtime
from proto.files import TooLarge, open_read, read_at_most

log = logging.getLogger("brokerd_shim.fixtures")

FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
MAX_OUTPUT_BYTES = 512 * 1024
# index.toml lists fixtures by tool, arguments and file name: a few dozen lines.
MAX_INDEX_BYTES = 256 * 1024


def _fixture_file(fixture: object) -> str | None:
    """The file name of one index entry, or None if the entry is malformed."""
    if not isinstance(fixture, dict) or set(fixture) != {"tool", "arguments", "file"}:
        return None
    name = fixture["file"]
    if not isinstance(name, str) or not FILE_NAME.fullmatch(name):
        return None
    return name


def _describe(spec: RunSpec) -> str:
    args = spec.arguments
    if spec.tool == "http_fetch" and isinstance(args, dict) and isinstance(args.get("url"), str):
        return args["url"][:500]
    return f"{spec.tool[:64]} {spec.request.arguments[:500]}"


def _read(path: Path, limit: int) -> bytes:
    """The regular file at path, read in one open, never through a link nor waiting on a FIFO
    (NotRegular); TooLarge when it holds more than limit bytes, read no further."""
    with open_read(path) as f:
        data = read_at_most(f.fileno(), limit + 1)
    if len(data) > limit:
        raise TooLarge(errno.EFBIG, f"larger than {limit:,} bytes", os.fspath(path))
    return data


class FixtureRuntime(Runtime):
    def __init__(self, folder: Path):
        self.folder = folder

    def _read(self, name: str, limit: int) -> bytes:
        # The owner's setting may name a folder that is a link; a file in it may not be one.
        return _read(Path(os.path.realpath(self.folder)) / name, limit)

    def _index(self) -> list:
        path = self.folder / "index.toml"
        try:
            data = tomllib.loads(self._read(path.name, MAX_INDEX_BYTES).decode("utf-8"))
        except FileNotFoundError:
            return []
        except OSError as e:
            log.error("fixtures: %s cannot be read: %s", path, e.strerror)
            raise ToolFailed(f"the fixture index {path.name} cannot be read") from None
        except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as e:
            log.error("fixtures: %s cannot be read: %s", path, e)
            raise ToolFailed(f"the fixture index {path.name} cannot be read") from None
        fixtures = data.get("fixture", [])
        if not isinstance(fixtures, list):
            raise ToolFailed(f"the fixture index {path.name} has no [[fixture]] list")
        return fixtures

    def _find(self, spec: RunSpec) -> str | None:
        for number, fixture in enumerate(self._index()):
            name = _fixture_file(fixture)
            if name is None:
                log.warning("fixtures: index.toml entry %d is malformed; skipped", number)
                continue
            if fixture["tool"] == spec.tool and fixture["arguments"] == spec.arguments:
                return name
        return None

    async def run(self, spec: RunSpec) -> str:
        # index.toml and the fixture are files: read on a thread, never on the event loop.
        return await asyncio.to_thread(self._answer, spec)

    def _answer(self, spec: RunSpec) -> str:
        name = self._find(spec)
        if name is None:
            raise ToolFailed(f"no fixture for {_describe(spec)}")
        path = self.folder / name
        try:
            data = self._read(name, MAX_OUTPUT_BYTES)
        except TooLarge:
            log.error("fixtures: %s is over %d bytes; not answered", path, MAX_OUTPUT_BYTES)
            raise ToolFailed(
                f"the fixture for {_describe(spec)} is over {MAX_OUTPUT_BYTES} bytes"
            ) from None
        except OSError as e:
            log.error("fixtures: %s is listed but cannot be read: %s", path, e.strerror)
            raise ToolFailed(f"the fixture for {_describe(spec)} cannot be read") from None
        log.info(
            "fixtures: session %s call %r answered from %s",
            spec.request.session,
            spec.request.call_id,
            name,
        )
        return data.decode("utf-8", errors="replace")
