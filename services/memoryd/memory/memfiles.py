"""Reading the memory files from disk, each in one read, as they are now.

Each file is read whole with one open and one read (never through a symbolic link, never from a
FIFO: proto.files.read_file), so a reader running beside the writer sees
the file before or after an atomic rename, never a mix. A missing, unreadable or non-UTF-8 file
raises FileDamaged naming the file and the problem: memoryd created every file at start, so a
missing one is a sign something is wrong, not an empty memory.
"""

from pathlib import Path

from memoryd.errors import FileDamaged
from memoryd.home import Home
from memoryd.memory import entries
from proto.files import NotRegular, read_file


def read_text(path: Path, name: str) -> str:
    try:
        data = read_file(path)
    except FileNotFoundError:
        raise FileDamaged(f"{name} is missing") from None
    except NotRegular as e:
        raise FileDamaged(f"{name} is {e.strerror}") from None
    except IsADirectoryError:
        raise FileDamaged(f"{name} is not a file") from None
    except OSError as e:
        raise FileDamaged(f"{name} cannot be read ({e.strerror or e})") from None
    return entries.decode(data, name)


def read_entries(home: Home, name: str) -> list[str]:
    """The entries of memory.md or user.md as they are on disk now."""
    return entries.parse(read_text(home.memory_file(name), name))
