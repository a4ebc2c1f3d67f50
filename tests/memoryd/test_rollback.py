"""A write that fails part way is taken back, on any file system: the journal
append failing after the rename puts the old file back and cuts notes.md back. (The real full
disk is tests/reliability/test_full_disk.py; these run without root.)"""

import errno

import pytest

from memoryd.errors import WriteFailed
from tests.callargs import loose_call

from .store_helpers import CLEAN, args, fill, new_store, snapshot


def _journal_fails(store, monkeypatch) -> None:
    def append(when, fields):
        path = store.home.edits_month(when)
        with open(path, "ab") as f:
            f.write(b'{"id": "torn')  # half a line, as a full disk leaves it
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store.journal, "append", append)


@pytest.mark.parametrize("hard_links", [True, False])
def test_a_journal_failure_after_the_rename_puts_everything_back(tmp_path, monkeypatch, hard_links):
    store = new_store(tmp_path)
    fill(store, "memory", ["keep", "leaving"])
    before = snapshot(store)
    if not hard_links:

        def no_link(*_a, **_k):
            raise OSError(errno.EPERM, "Operation not permitted")

        monkeypatch.setattr("memoryd.journal.rollback.os.link", no_link)
    _journal_fails(store, monkeypatch)
    with pytest.raises(WriteFailed) as failed:
        store.call(*loose_call(args(action="remove", file="memory", old="leaving"), **CLEAN))
    assert str(failed.value) == (
        "not applied: memoryd cannot write its memory files (No space left on device); "
        "memory.md is unchanged"
    )
    after = snapshot(store)
    journal = "edits/2026-09.jsonl"
    assert after.pop(journal).endswith(b'{"id": "torn')  # the fake's own torn line
    before.pop(journal)
    assert after == before
    assert [p.name for p in store.home.memory.iterdir() if p.name.endswith(".tmp")] == []


def test_a_real_journal_append_that_fails_is_cut_back(tmp_path, monkeypatch):
    store = new_store(tmp_path)
    fill(store, "memory", ["keep"])
    before = snapshot(store)
    import memoryd.journal.journal as journal_module

    def torn_append(path, data):
        with open(path, "ab") as f:
            f.write(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal_module, "append_bytes", torn_append)
    with pytest.raises(WriteFailed):
        store.call(*loose_call(args(action="note", text="seen on Thursday"), **CLEAN))
    assert snapshot(store) == before
