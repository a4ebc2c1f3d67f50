"""keptfiles names a client's kept state by the home itself (its real path, its device and
inode), and startstate.adopt carries an earlier version's file (named by the path as typed) over."""

import hashlib
import json
import os
import time

from memory_mcp import raised
from memory_mcp.keptfiles import kept_files
from memory_mcp.startstate import adopt
from proto.labels import Label

UNTRUSTED = Label(klass="private", untrusted=True)


def _legacy(folder, spelling):
    digest = hashlib.sha256(os.fsencode(str(spelling.absolute()))).hexdigest()[:16]
    return folder / f"desk-{digest}.json"


def test_every_spelling_of_a_home_gets_the_same_names(tmp_path):
    home = tmp_path / "home"
    (home / "memory").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(home)
    state = tmp_path / "state"
    names = kept_files(state, home, "desk").names
    assert len(names) == 2  # the real path's and the folder's
    for spelling in (link, home / "memory" / "..", tmp_path / "link" / "." / "memory" / ".."):
        assert kept_files(state, spelling, "desk").names == names
    assert kept_files(state, home, "desk-top").names != names  # another client
    other = tmp_path / "other"
    other.mkdir()
    assert set(kept_files(state, other, "desk").names).isdisjoint(names)  # another home


def test_a_home_moved_on_its_disk_keeps_its_clients_state(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    state = tmp_path / "state"
    raised.raise_kept(kept_files(state, home, "desk").names, UNTRUSTED, "mcp-desk-a")
    moved = tmp_path / "moved"
    home.rename(moved)
    found = raised.load_all(kept_files(state, moved, "desk").names)
    assert found is not None and found.label == UNTRUSTED


def test_a_raised_file_of_an_earlier_version_is_carried_over_and_removed(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    state = tmp_path / "state"
    kept = kept_files(state, home, "desk")
    old = _legacy(state, home)
    assert old in kept.legacy
    raised.raise_kept(old, Label(klass="secret", untrusted=True), "mcp-desk-old")
    assert adopt(kept, deadline=0.0) is None
    assert not old.exists()
    found = raised.load_all(kept.names)
    assert found is not None and found.label == raised.WORST and found.session == "mcp-desk-old"


def test_a_trust_again_said_after_an_earlier_versions_raising_stands(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    state = tmp_path / "state"
    kept = kept_files(state, home, "desk")
    old = _legacy(state, home)
    state.mkdir(mode=0o700)
    old.write_text(
        json.dumps(
            {"class": "private", "untrusted": True, "session": "s", "since": "2020-01-01T00:00:00Z"}
        )
    )
    assert raised.forget(kept) is True  # the owner's trust-again: the old file goes too
    assert not old.exists()
    old.write_text(  # an earlier version's file left under another spelling, older than it
        json.dumps(
            {"class": "private", "untrusted": True, "session": "s", "since": "2020-01-01T00:00:00Z"}
        )
    )
    adopt(kept, deadline=0.0)
    found = raised.load_all(kept.names)
    assert found is not None and found.label == raised.CLEAN


def test_a_clean_file_of_an_earlier_version_is_not_carried(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    state = tmp_path / "state"
    kept = kept_files(state, home, "desk")
    raised.raise_kept(_legacy(state, home), raised.CLEAN, raised.NONE_SEEN)
    assert adopt(kept, deadline=0.0) is None
    assert raised.load_all(kept.names) is None  # so the recall log is read
    assert list(state.iterdir()) == []


def test_a_raised_file_of_an_earlier_version_counts_while_the_folder_is_locked(tmp_path):
    """Another memory-mcp holds the folder: nothing is carried, but the connection is raised."""
    home = tmp_path / "home"
    home.mkdir()
    state = tmp_path / "state"
    kept = kept_files(state, home, "desk")
    old = _legacy(state, home)
    raised.raise_kept(old, UNTRUSTED, "mcp-desk-old")
    with raised.held(state, None):
        found = adopt(kept, deadline=time.monotonic())
    assert found is not None and found.label == UNTRUSTED
    assert old.exists() and raised.load_all(kept.names) is None  # carried at a later start
