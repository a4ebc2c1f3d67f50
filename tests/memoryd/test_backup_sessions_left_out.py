"""backup --with-sessions holds the session logs recall reads; a log it does not (a symbolic
link, a FIFO) is left out of the archive, and note_sessions says which, with why, for the
backup's answer to count them as restore's answer counts what it leaves out."""

import os
import tarfile

from memoryd.data import snapshot
from memoryd.home import Home
from proto.records import UserRecord, append_session_record
from tests.memoryd.owner_data_harness import Memoryd, T


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


def test_the_backup_answer_counts_and_names_the_logs_it_left_out(tmp_path):
    md = Memoryd(tmp_path / "home")
    md.say("mm-0001", "Where is the staging cluster?")
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(b"")
    (md.home.sessions / "mm-0002").mkdir()
    md.home.session_log("mm-0002").symlink_to(outside)
    answer = md.data("backup", with_sessions=True)
    md.close()
    assert answer["left_out_count"] == 1
    assert list(answer["left_out"]) == ["mm-0002"]
    assert (
        "; 1 session log left out, as recall does not read it: sessions/mm-0002 ("
        in (answer["message"])
    )
    assert "symbolic link" in answer["message"]
    with tarfile.open(answer["path"]) as archive:
        names = archive.getnames()
    assert "sessions/mm-0001/0.jsonl" in names
    assert not any(name.startswith("sessions/mm-0002") for name in names)


def test_a_backup_without_sessions_says_nothing_left_out(tmp_path):
    md = Memoryd(tmp_path / "home")
    (md.home.sessions / "mm-0002").mkdir(parents=True)
    os.mkfifo(md.home.session_log("mm-0002"))
    answer = md.data("backup")
    md.close()
    assert answer["left_out_count"] == 0 and "left out" not in answer["message"]
