"""A crash in the middle of an append to notes.md, then another note: the index built note by note
must equal a reindex of the same notes.md (a log read again gives the same index).
"""

from memoryd.home import Home, append_bytes
from memoryd.index.index import Index
from memoryd.memory.store import MemoryStore
from tests.callargs import loose_call
from tests.reliability.crash_harness import CLEAN, fresh_index, index_rows, write_config


def test_a_torn_append_then_a_note_indexes_as_a_reindex_does(tmp_path):
    write_config(tmp_path)
    home = Home(tmp_path / "home")
    store = MemoryStore(home, soul_starter=tmp_path / "soul.md")
    store.ensure()
    index = Index(home)
    index.open()
    store.call(*loose_call({"action": "note", "text": "The first note."}, **CLEAN))
    index.catch_up_notes()
    # What a kill in the middle of the next append's os.write leaves: half a header, no newline.
    append_bytes(home.memory_file("notes.md"), "§ noted 2026-11-30T04:1".encode())
    index.catch_up_notes()
    store.call(*loose_call({"action": "note", "text": "The third note."}, **CLEAN))
    index.catch_up_notes()
    index.close()
    assert index_rows(home.index_db) == fresh_index(home.root, tmp_path)
