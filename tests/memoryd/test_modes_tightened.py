"""memoryd's files are 0600 (spec 3): one left 0644 (an editor's save, a cp, a restore by hand)
is made 0600 at start, through its own descriptor, with one log line naming it, and an append
to one found loose makes it 0600 too. A file with another hard link is not chmodded."""

import datetime as dt
import logging
import os
import stat

from memoryd.home import append_line
from tests.callargs import loose_call
from tests.memoryd.store_helpers import CLEAN, args, new_store


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_the_start_makes_memoryds_loose_files_0600_and_says_which(tmp_path, caplog):
    store = new_store(tmp_path)
    store.call(*loose_call(args(action="add", file="user", text="Prefers UTC."), **CLEAN))
    home = store.home
    recalls = home.recalls_month(dt.datetime.now(dt.UTC))
    recalls.write_bytes(b"")
    loose = [
        home.memory_file("user.md"),
        home.memory_file("notes.md"),
        home.memory_file("soul.md"),
        home.edits_month(store.now()),
        recalls,
    ]
    for path in loose:
        os.chmod(path, 0o644)
    outside = tmp_path / "outside.md"
    os.link(home.memory_file("memory.md"), outside)  # memory.md is replaced whole: let be
    os.chmod(outside, 0o644)
    with caplog.at_level(logging.INFO, logger="memoryd.home"):
        new_store(tmp_path)
    assert {p.name: mode(p) for p in loose} == {p.name: 0o600 for p in loose}
    said = [r.getMessage() for r in caplog.records if "set to 0600" in r.getMessage()]
    wanted = [f"{p}: mode 0644 set to 0600, as memoryd's files are" for p in loose]
    assert sorted(said) == sorted(wanted)
    assert mode(outside) == 0o644


def test_an_append_to_a_loose_file_makes_it_0600(tmp_path):
    store = new_store(tmp_path)
    path = store.home.memory_file("labels.jsonl")
    path.write_bytes(b"")
    os.chmod(path, 0o644)
    append_line(path, "{}")
    assert mode(path) == 0o600 and path.read_bytes() == b"{}\n"
