"""Every count a backup's answer and its manifest give is of what the archive holds, and every
count a restore's answer gives is of what it laid: an archive without session logs holds no
session record, and a restore lays none (bxctl lays the logs after), nor the entries and notes it
leaves out as forgotten since the archive was made. An older memoryd's archive, whose manifest
counted the index's records whatever it held, is still restored, without those records said."""

import gzip
import io
import json
import re
import shutil
import tarfile

import pytest

from memoryd.data import archive, layout
from tests.memoryd.owner_data_harness import Memoryd

ENTRY = "Owner prefers answers in UTC."
SECRET = "Bank card PIN is 4321."
NOTE = "The spare key is under the blue pot."


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def _fill(m: Memoryd) -> None:
    m.call({"action": "add", "file": "memory", "text": ENTRY})
    m.call({"action": "note", "text": NOTE})
    m.say("s-one", "hello from one", "hello back")
    m.say("s-two", "hello from two", "and back", "once more")


def _manifest(path) -> dict:
    with tarfile.open(path, "r:gz") as tar:
        return json.loads(tar.extractfile(archive.MANIFEST).read())


def _said(message: str) -> dict[str, int]:
    """The counts an answer's message gives (the part after its first '): ')."""
    counts = message.split("): ", 1)[1].split(";", 1)[0]
    return {
        noun: int(n.replace(",", "")) for n, noun in re.findall(r"([0-9][0-9,]*) (\w+)", counts)
    }


def _held(m: Memoryd) -> tuple[int, int]:
    """The entries and notes the home holds, as an export counts them."""
    made = m.data("export", format="jsonl")
    return made["entries"], made["notes"]


def test_a_backup_without_sessions_counts_no_record(md):
    _fill(md)
    made = md.data("backup")
    assert made["counts"]["records"] == 0
    assert _manifest(made["path"])["counts"]["records"] == 0
    assert "record" not in made["message"]
    assert _said(made["message"])["entry"] == 1 and _said(made["message"])["note"] == 1


def test_a_backup_with_sessions_counts_the_records_of_the_logs_it_holds(md):
    _fill(md)
    made = md.data("backup", with_sessions=True)
    assert made["counts"]["records"] == 5 == _manifest(made["path"])["counts"]["records"]
    assert "5 records" in made["message"]
    # a session the index holds records of whose log is gone is none of the archive's
    shutil.rmtree(md.home.session_log("s-two").parent)
    made = md.data("backup", with_sessions=True)
    assert made["counts"]["records"] == 2
    with tarfile.open(made["path"], "r:gz") as tar:
        assert [n for n in tar.getnames() if n.startswith("sessions/")] == [
            "sessions/s-one/0.jsonl"
        ]


def _restore_into_new_home(tmp_path, made: str, name: str = "a.tar.gz") -> tuple[Memoryd, dict]:
    m = Memoryd(tmp_path / "new")
    layout.backups(m.home).mkdir(mode=0o700, exist_ok=True)
    shutil.copy(made, layout.backups(m.home) / name)
    return m, m.data("restore", name=name)


def test_a_restore_says_what_it_laid_and_no_record(md, tmp_path):
    _fill(md)
    made = md.data("backup")["path"]
    m, out = _restore_into_new_home(tmp_path, made)
    try:
        said = _said(out["message"])
        assert "record" not in out["message"]
        assert said["entry"] == 1 and said["note"] == 1 and _held(m) == (1, 1)
        assert out["laid"]["records"] == 0
        edits = json.loads(m.admin("log", {"n": 50, "json": True}))["edits"]
        assert said["edits"] == len(edits) == out["laid"]["edits"]
        assert m.admin("search", {"query": "hello"}).startswith("(no matches")
    finally:
        m.close()


def _rewritten(path, tmp_path, records: int) -> str:
    """The archive at path as an older memoryd wrote it: the same files, its manifest counting
    records (the index's, whatever the archive held)."""
    out = tmp_path / "older.tar.gz"
    with tarfile.open(path, "r:gz") as old, gzip.open(out, "wb") as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as new:
            for member in old.getmembers():
                data = old.extractfile(member).read()
                if member.name == archive.MANIFEST:
                    manifest = json.loads(data)
                    manifest["counts"]["records"] = records
                    data = json.dumps(manifest, indent=1).encode()
                    member.size = len(data)
                new.addfile(member, io.BytesIO(data))
    return str(out)


def test_an_older_archive_counting_records_it_does_not_hold_is_restored_without_them(md, tmp_path):
    _fill(md)
    older = _rewritten(md.data("backup")["path"], tmp_path, 5)
    m, out = _restore_into_new_home(tmp_path, older)
    try:
        assert out["counts"]["records"] == 5  # the archive's manifest, as bxctl checks it
        assert "record" not in out["message"]
        assert _said(out["message"])["entry"] == 1
    finally:
        m.close()


def test_restore_replace_counts_what_it_laid_not_what_it_left_out(md, tmp_path):
    md.call({"action": "add", "file": "memory", "text": SECRET})
    md.call({"action": "note", "text": NOTE})
    made = md.data("backup")["path"]
    name = "before.tar.gz"
    shutil.copy(made, tmp_path / name)
    md.data("forget", id="memory.md:1")
    md.data("forget", id=NOTE)
    shutil.copy(tmp_path / name, layout.backups(md.home) / name)
    out = md.data("restore", name=name, replace=True)
    said = _said(out["message"])
    assert "were left out" in out["message"], out["message"]
    assert said["entries"] == 0 and said["notes"] == 0
    assert _held(md) == (0, 0)
    assert out["counts"]["entries"] == 1 and out["counts"]["notes"] == 1  # the archive's


def test_the_backups_removed_are_counted_as_they_read(md):
    _fill(md)
    md.data("backup")
    made = md.data("backup", keep=1)
    assert len(made["removed"]) == 1
    assert "; removed 1 older backup (keeping 1)" in made["message"], made["message"]
