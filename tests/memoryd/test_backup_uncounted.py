"""backup of a memory.md memoryd reads no entry of (hand edited and saved in another encoding, or
past what memoryd reads): the archive holds it byte for byte, and the answer and the manifest say
so in the words stats uses for it, rather than "0 entries" as if the memory were empty. The counts
stay what restore checks them against."""

import json
import tarfile

import pytest
from typer.testing import CliRunner

from bxctl.cli import app
from memoryd.memory import entries
from tests.memoryd_process import MemorydProcess

runner = CliRunner()
# Two entries as an editor set to Latin-1 saves them: "é" is the one byte 0xE9.
LATIN_1 = "Owner drinks café au lait.\n§\nThe owner's sister is called Inès.\n".encode("latin-1")


@pytest.fixture
def memoryd(tmp_path):
    proc = MemorydProcess(tmp_path)
    proc.start()
    yield proc
    proc.stop()


def bx(memoryd, *argv) -> str:
    result = runner.invoke(app, list(argv), env={"BOXMAKER_HOME": str(memoryd.home)})
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout


def manifest(path) -> dict:
    with tarfile.open(path, "r:gz") as tar:
        return json.loads(tar.extractfile("manifest.json").read())


def member(path, name: str) -> bytes:
    with tarfile.open(path, "r:gz") as tar:
        return tar.extractfile(name).read()


def test_a_memory_md_not_utf8_is_said_kept_byte_for_byte_not_empty(memoryd, tmp_path):
    (memoryd.home / "memory/memory.md").write_bytes(LATIN_1)
    bad = LATIN_1.index(b"\xe9")
    problem = f"memory.md is not valid UTF-8 (byte {bad})"
    stats = bx(memoryd, "memory", "stats")
    assert f"memory.md: {problem}" in stats  # what memoryd says of the file elsewhere
    answer = json.loads(bx(memoryd, "memory", "backup", "--json"))
    said = (
        f"; but {problem}: its entries are not counted here (memoryd reads none of them until "
        f"it is mended), and it is archived byte for byte ({len(LATIN_1)} bytes); "
    )
    assert said in answer["message"], answer["message"]
    uncounted = [{"path": "memory/memory.md", "size": len(LATIN_1), "problem": problem}]
    assert answer["uncounted"] == uncounted
    assert manifest(answer["path"])["uncounted"] == uncounted
    assert manifest(answer["path"])["counts"]["entries"] == answer["counts"]["entries"] == 0
    assert member(answer["path"], "memory/memory.md") == LATIN_1
    # restored as it is: restore checks the counts it always did
    out = bx(memoryd, "memory", "restore", "--replace", answer["path"])
    assert f"but no session can start until the restored memory is mended: {problem}" in out
    assert (memoryd.home / "memory/memory.md").read_bytes() == LATIN_1


def test_a_user_md_past_what_memoryd_reads_is_said_too(memoryd):
    big = b"x" * (entries.MAX_BYTES + 1)
    (memoryd.home / "memory/user.md").write_bytes(big)
    answer = json.loads(bx(memoryd, "memory", "backup", "--json"))
    problem = str(entries.TooLarge("user.md", len(big)))
    assert answer["uncounted"] == [{"path": "memory/user.md", "size": len(big), "problem": problem}]
    assert f"; but {problem}: its entries are not counted here" in answer["message"]
    assert f"archived byte for byte ({len(big):,} bytes)" in answer["message"]


def test_a_backup_of_files_memoryd_reads_says_nothing_more(memoryd):
    (memoryd.home / "memory/memory.md").write_bytes(LATIN_1.decode("latin-1").encode())
    answer = json.loads(bx(memoryd, "memory", "backup", "--json"))
    assert answer["uncounted"] == [] and "uncounted" not in manifest(answer["path"])
    assert answer["counts"]["entries"] == 2
    assert ": 2 entries, " in answer["message"] and "; but " not in answer["message"]
