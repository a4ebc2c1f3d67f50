"""A kill between the write of the merge mark's temporary file and its rename (a forget's
ftsmerge.owe) leaves index/.memory.sqlite3.merge-owed.<hex>.tmp: the next open of the index
removes it with a line, so none piles up, and leaves every other name (and the mark itself) be."""

import logging

from memoryd.home import Home, ensure_dir
from memoryd.index.index import Index


def test_the_merge_marks_temporary_file_is_removed_at_open(tmp_path, caplog):
    home = Home(tmp_path / "home")
    ensure_dir(home.index_dir)
    temp = home.index_dir / ".memory.sqlite3.merge-owed.3077c9bc0add.tmp"
    temp.write_bytes(b"")
    mark = home.index_dir / "memory.sqlite3.merge-owed"
    mark.write_bytes(b"")
    others = [
        home.index_dir / ".memory.sqlite3.merge-owed.not-hex-here.tmp",
        home.index_dir / ".owners-notes.0123456789ab.tmp",
    ]
    for path in others:
        path.write_bytes(b"the owner's")
    folder = home.index_dir / ".memory.sqlite3.merge-owed.0123456789ab.tmp"
    folder.mkdir()
    index = Index(home)
    with caplog.at_level(logging.INFO):
        index.open()
    index.close()
    assert not temp.exists()
    assert f"{temp}: removed a temporary file left by a crash" in caplog.text
    assert mark.exists()  # the forget's own mark: the next forget merges
    assert all(path.read_bytes() == b"the owner's" for path in others)
    assert folder.is_dir()
