"""A clean record kept under a home folder's device and inode alone says nothing of the home now
at that inode: a removed home's freed inode may be handed to a new one at once (ext4 does), and
that home's recall log may show its clients given memory-tainted text. startstate.take then reads
the recall log; a raised record under the folder's name still counts (a home moved on its disk)."""

import json
import os
import threading

import anyio

from memory_mcp import raised, startstate
from memory_mcp.keptfiles import kept_files
from proto.labels import Label

DECLARED = Label(klass="private", untrusted=False)
UNTRUSTED = Label(klass="private", untrusted=True)


def _tainted_recall_log(home) -> None:
    hit = {"kind": "noted", "session": "mm-web00001", "record": 1, "tag": "memory-tainted"}
    line = {
        "time": "2026-12-01T06:00:00Z",
        "session": "mcp-desk-20261201T060000-000Z",
        "query": "q",
        "k": 5,
        "hits": [hit],
    }
    (home / "memory" / "recalls").mkdir(parents=True)
    (home / "memory" / "recalls" / "2026-12.jsonl").write_text(
        json.dumps(line, separators=(",", ":")) + "\n"  # as memoryd writes its lines
    )


def _start(state, home, declared=DECLARED) -> Label:
    _kept, label, check = startstate.take(
        state, home, "desk", "mcp-desk-20261206T050000-000Z", declared, 10.0
    )
    try:
        if check is not None:
            label = anyio.run(check.label)
    finally:
        for thread in threading.enumerate():
            if thread.name == "recall-log":
                thread.join(10)
    return label or declared


def _folder_name_only(state, old, new) -> None:
    """The state a removed home old left, as new finds it: under new's folder name alone."""
    (folder_file,) = [p for p in kept_files(state, old, "desk").names if ".folder-" in p.name]
    wanted = [p for p in kept_files(state, new, "desk").names if ".folder-" in p.name][0]
    os.replace(folder_file, wanted)
    kept_files(state, old, "desk").primary.unlink()


def test_a_clean_record_found_by_the_folder_alone_sends_the_client_to_the_recall_log(tmp_path):
    state, old, new = tmp_path / "state", tmp_path / "work-home", tmp_path / "personal-home"
    old.mkdir()
    new.mkdir()
    raised.raise_kept(kept_files(state, old, "desk").names, raised.CLEAN, raised.NONE_SEEN)
    _folder_name_only(state, old, new)  # as if new had been given old's freed inode
    _tainted_recall_log(new)
    assert _start(state, new).untrusted


def test_a_raised_record_found_by_the_folder_alone_still_counts(tmp_path):
    state, old, new = tmp_path / "state", tmp_path / "work-home", tmp_path / "moved-home"
    old.mkdir()
    new.mkdir()
    raised.raise_kept(kept_files(state, old, "desk").names, UNTRUSTED, "mcp-desk-a")
    _folder_name_only(state, old, new)
    assert _start(state, new).untrusted  # no recall log: the kept raising alone says so
