"""A restore lays the archive's session logs the home lacks, but not one whose session holds a
record the owner made memoryd forget: the owner may have removed that log to be rid of the text,
and the archive (made before or after the forget: loopd's logs keep what memoryd forgets) would
bring it back into the home. memoryd names such sessions in its answer; bxctl leaves their logs
out and says so. Real memoryd processes, the owner's commands."""

import json
import shutil

from tests.bxctl.test_restore_sessions import bx, ok, say
from tests.bxctl.test_restore_sessions import homes as homes  # the fixture

SECRET = "My safe combination is 31-07-1984 zzsecret."


def test_a_log_holding_a_forgotten_record_is_left_out_and_said(homes, tmp_path):
    a, _ = homes
    say(a, "s-safe", SECRET)
    say(a, "s-garden", "The garden needs watering on Sundays.")
    answer = ok(bx(a, "memory", "backup", "--with-sessions", "--json"))
    archive = tmp_path / "older.tar.gz"
    shutil.copy(json.loads(answer)["path"], archive)
    ok(bx(a, "memory", "forget", "session:s-safe:0", "--yes"))
    for session in ("s-safe", "s-garden"):  # the owner removes the logs, to be rid of the text
        shutil.rmtree(a.home / "sessions" / session)
    out = ok(bx(a, "memory", "restore", "--replace", str(archive)))
    assert "bxctl laid 1 session log into sessions/" in out
    assert (
        "1 log left out that holds records you made memoryd forget (the archive keeps them)" in out
    )
    assert not (a.home / "sessions" / "s-safe").exists()
    assert (a.home / "sessions" / "s-garden" / "0.jsonl").exists()
    held = b"".join(
        p.read_bytes() for p in a.home.rglob("*") if p.is_file() and "backups" not in p.parts
    )
    assert b"zzsecret" not in held
    assert "watering" in ok(bx(a, "memory", "search", "watering"))
