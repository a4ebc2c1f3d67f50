"""backup --with-sessions holds the session logs recall reads; a log it does not (a symbolic
link, a FIFO) is left out of the archive, and note_sessions says which, with why, for the
backup's answer to count them as restore's answer counts what it leaves out."""

import os

from memoryd.data import snapshot
from memoryd.home import Home
from proto.records import UserRecord, append_session_record
from tests.memoryd.owner_data_harness import T


def test_the_logs_a_backup_leaves_out_are_said_with_why(tmp_path):
    home = Home(tmp_path / "home")
    for name in ("mm-0001", "mm-0002", "mm-0003"):
        (home.sessions / name).mkdir(parents=True)
    append_session_record(home.session_log("mm-0001"), UserRecord(time=T, content="kept"))
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(b"")
    home.session_log("mm-0002").symlink_to(outside)
    os.mkfifo(home.session_log("mm-0003"))
    skipped: dict[str, str] = {}
    noted = snapshot.note_sessions(home, skipped)
    assert [held.name for held in noted] == ["sessions/mm-0001/0.jsonl"]
    assert sorted(skipped) == ["mm-0002", "mm-0003"]
    assert "symbolic link" in skipped["mm-0002"] and "FIFO" in skipped["mm-0003"]
