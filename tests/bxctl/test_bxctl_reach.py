"""bxctl where its talk with memoryd cannot finish: Ctrl-C while memoryd holds the request, a
socket it may not open or a path that is no socket, a closed stderr, an editor it cannot run.
Each says what happened in one line on stderr (none on stdout), never "not answering" for
something else."""

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bxctl.cli import app
from proto.messages import MemoryAdminReply, Reindex, Reindexed
from proto.server import serve_unix
from tests.bxctl.test_bxctl_failures import Answers, run_bxctl

runner = CliRunner()


class Held(Answers):
    """Answers, but a request is held until released: memoryd busy with it."""

    def __init__(self, home: Path):
        super().__init__(home)
        self.hold = True
        self.gone_after: str | None = None
        self.failing = "\0"  # a request whose arg holds this fails (memoryd's internal error)
        self.got = threading.Event()
        self.release = asyncio.Event()

    async def handle(self, message):
        self.seen.append(message)
        self.got.set()
        if self.hold:
            await self.release.wait()
        if isinstance(message, Reindex):
            return Reindexed(logs=0, records=0, notes=0)
        if self.failing in message.arg:
            raise RuntimeError("failed")
        if message.command == self.gone_after:  # the socket is gone once this is answered
            os.unlink(self.path)
        check = "0" * 64
        answer = json.dumps({"message": "done", "texts": [], "check": check})
        return MemoryAdminReply(text=self.texts.get(message.command, answer))


@pytest.fixture
def held(tmp_path):
    fake = Held(tmp_path)
    (tmp_path / "backups").mkdir()
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(
        serve_unix(fake.path, fake.handle, {"memory_admin", "reindex"}, name="fake")
    )
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield fake
    loop.call_soon_threadsafe(fake.release.set)
    loop.call_soon_threadsafe(server.close)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


def interrupt(argv: list[str], fake: Held) -> tuple[int, str, str]:
    code = "from bxctl.cli import main; main()"
    env = {**os.environ, "BOXMAKER_HOME": str(fake.home), "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("BOXMAKER_MEMORY_SOCKET", None)
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert fake.got.wait(30), "the request never came"
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["memory", "backup"], "memoryd may still finish the backup it was sent: ls "),
        (["memory", "forget", "note:1", "--yes"], "may still finish the forget it was sent: bxctl"),
        (["memory", "undo", "2026-01-01-0001"], "may still finish the undo it was sent: bxctl"),
        (["reindex"], "memoryd may still finish the reindex it was sent"),
        (["memory", "log"], "interrupted; nothing was changed"),
        (["memory", "forget", "note:1"], "interrupted; nothing was changed"),  # its preview
    ],
)
def test_ctrl_c_while_memoryd_holds_the_request_is_one_line(held, argv, said):
    code, out, err = interrupt(argv, held)
    assert code == 130 and out == ""
    [line] = err.splitlines()
    assert line.startswith("bxctl: interrupted; ") and said in line, line


def test_a_path_that_is_not_a_socket_is_named_so(tmp_path):
    for path, kind in ((tmp_path / "plain", "a file"), (tmp_path, "a folder")):
        if kind == "a file":
            path.write_text("")
        result = runner.invoke(
            app, ["memory", "log", "--memory-socket", str(path)], env={"BOXMAKER_HOME": None}
        )
        assert result.exit_code == 3
        [line] = result.stderr.splitlines()
        assert line == (
            f"bxctl: {path} is {kind}, not a socket: --memory-socket (or "
            "$BOXMAKER_MEMORY_SOCKET) must name memoryd's owner socket, "
            "$BOXMAKER_HOME/run/owner-memory/admin.sock (runbook: wrong-socket)"
        )


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"), reason="runs bxctl without root's reach"
)
@pytest.mark.parametrize("closed", ["folder", "socket"])
def test_a_socket_bxctl_may_not_open_says_permission_denied(held, closed):
    """As under rootful podman: run/ is uid 10001's, and the owner runs bxctl as themselves
    (here: root without the capabilities that pass over permissions)."""
    held.hold = False
    socket = held.path
    if closed == "folder":
        os.chown(socket.parent, 10001, 10001)
        os.chmod(socket.parent, 0o700)
    else:
        os.chown(socket, 10001, 10001)
        os.chmod(socket, 0o600)
    drop = "-dac_override,-dac_read_search"
    code = "from bxctl.cli import main; main()"
    env = {**os.environ, "BOXMAKER_HOME": str(held.home)}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    env.pop("BOXMAKER_MEMORY_SOCKET", None)
    argv = ["setpriv", f"--bounding-set={drop}", f"--inh-caps={drop}", sys.executable, "-c", code]
    result = subprocess.run(
        [*argv, "memory", "log"], capture_output=True, text=True, env=env, timeout=60
    )
    os.chown(socket.parent, 0, 0)  # the fixture's server is stopped by root as it was made
    assert result.returncode == 3, result.stderr
    [line] = result.stderr.splitlines()
    where = f" on the folder {socket.parent}" if closed == "folder" else ""
    assert line.startswith("bxctl: cannot ") and f"permission denied{where}" in line, line
    assert line.endswith("(it belongs to uid 10001): run bxctl as that user or as root"), line
    assert held.seen == []


@pytest.mark.parametrize("argv", [["memory", "export"], ["memory", "no-such-command"]])
def test_a_closed_stderr_never_puts_a_line_on_stdout(tmp_path, argv):
    (tmp_path / "run" / "owner-memory").mkdir(parents=True)
    result = run_bxctl(*argv, home=tmp_path, stdout=subprocess.PIPE, preexec_fn=lambda: os.close(2))
    assert result.returncode == 1
    assert result.stdout == b""


def test_an_editor_that_cannot_run_leaves_no_copy(held, tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    held.hold = False
    held.texts["file"] = json.dumps({"text": "- The owner is Ada.\n", "base": "0" * 64})
    result = runner.invoke(
        app,
        ["memory", "edit", "user"],
        env={"BOXMAKER_HOME": str(held.home), "EDITOR": "no-such-editor", "VISUAL": None},
    )
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("bxctl: cannot run the editor no-such-editor: ")
    assert line.endswith("nothing was changed")
    assert os.listdir(scratch) == []


@pytest.mark.parametrize("changed", [False, True])
def test_an_editor_that_fails_keeps_the_copy_only_when_it_was_changed(
    held, tmp_path, monkeypatch, changed
):
    """An editor that exits with an error sends nothing; an unchanged copy of the owner's file
    is not left in $TMPDIR, a changed one is kept for the owner's work and its path said."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    editor = tmp_path / "failing-editor"
    body = 'echo "- Likes tea." >> "$1"\n' if changed else ""
    editor.write_text(f"#!/bin/sh\n{body}exit 3\n")
    editor.chmod(0o700)
    held.hold = False
    held.texts["file"] = json.dumps({"text": "- The owner is Ada.\n", "base": "0" * 64})
    result = runner.invoke(
        app,
        ["memory", "edit", "user"],
        env={"BOXMAKER_HOME": str(held.home), "EDITOR": str(editor), "VISUAL": None},
    )
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("bxctl: the editor exited with status 3; nothing was sent")
    left = [p for folder in scratch.iterdir() for p in folder.iterdir()]
    if changed:
        assert [p.read_text() for p in left] == ["- The owner is Ada.\n- Likes tea.\n"]
        assert str(left[0]) in line
    else:
        assert os.listdir(scratch) == [] and line.endswith("nothing was sent or changed")
    assert [kind for kind, _ in held.seen if kind == "edit"] == []


@pytest.mark.parametrize("command", ["restore", "import"])
@pytest.mark.parametrize(
    ("name", "said"), [("gone.tar.gz", "does not exist"), (".", "is not a file")]
)
def test_a_file_to_hand_over_that_is_missing_is_said_so(held, tmp_path, command, name, said):
    path = tmp_path / name
    result = runner.invoke(
        app, ["memory", command, str(path)], env={"BOXMAKER_HOME": str(held.home)}
    )
    assert result.exit_code == 1
    assert result.stderr == f"bxctl: {path} {said}; nothing was done\n"
    assert held.seen == []


@pytest.mark.parametrize("gone", [False, True])
def test_a_prune_refused_after_the_copy_is_said_and_the_copy_stands(held, tmp_path, gone):
    """memoryd refuses the prune, or is gone by then: the backup and its copy stand."""
    held.hold = False
    held.gone_after = "backup" if gone else None
    made = held.home / "backups" / "memory-20261203T000000Z.tar.gz"
    made.write_bytes(b"archive")
    answer = {"message": f"backup written to {made}", "path": str(made), "removed": []}
    held.texts["backup"] = json.dumps(answer)
    out = tmp_path / "copy.tar.gz"
    held.failing = "\0" if gone else '"prune_only":true'
    result = runner.invoke(
        app,
        ["memory", "backup", str(out), "--keep", "2"],
        env={"BOXMAKER_HOME": str(held.home)},
    )
    assert result.exit_code == 0, result.stderr
    assert out.read_bytes() == b"archive"
    assert f"; copied to {out}; the older ones were not removed (" in result.stdout
    sent = [{"with_sessions": False}, {"keep": 2, "prune_only": True, "made": made.name}]
    assert [json.loads(m.arg) for m in held.seen] == sent[: 1 if gone else 2]


@pytest.mark.parametrize(
    "argv",
    [
        ["memory", "undo", "2026-01-01-0001"],
        ["memory", "log"],
        ["memory", "accept", "p-2026-01-01-0001"],
        ["memory", "promote", "1", "--file", "user"],
        ["memory", "stats"],
        ["memory", "search", "tea"],
        ["memory", "backup"],
        ["reindex"],
    ],
)
def test_a_socket_of_another_home_is_refused_before_anything_is_asked(held, tmp_path, argv):
    """A $BOXMAKER_MEMORY_SOCKET left from another stack names that home's memoryd: every
    command, not only the data commands, is refused naming both homes, and memoryd hears
    nothing."""
    held.hold = False
    mine = tmp_path / "mine"
    mine.mkdir()
    result = runner.invoke(
        app,
        argv,
        env={"BOXMAKER_HOME": str(mine), "BOXMAKER_MEMORY_SOCKET": str(held.path)},
    )
    assert result.exit_code == 1, result.output
    [line] = result.stderr.splitlines()
    assert f"is the memoryd of the home {held.home}, but BOXMAKER_HOME is {mine}" in line
    assert held.seen == []


def test_a_socket_path_with_a_line_break_is_named_on_one_line(tmp_path):
    path = tmp_path / "a\nb.sock"
    result = runner.invoke(
        app, ["memory", "log", "--memory-socket", str(path)], env={"BOXMAKER_HOME": None}
    )
    assert result.exit_code == 3
    [line] = result.stderr.splitlines()
    assert "a\\x0ab.sock" in line and "memoryd is not answering" in line


def test_the_homes_own_socket_through_a_link_is_taken_and_another_behind_a_link_refused(
    held, tmp_path
):
    """Where the socket really is decides, not how its path reads: run/ may be a link the owner
    made, and a link named anything may lead to another home's socket."""
    held.hold = False
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "run").symlink_to(held.home / "run")  # this home's run/ lives elsewhere
    result = runner.invoke(
        app,
        ["memory", "log"],
        env={
            "BOXMAKER_HOME": str(held.home),
            "BOXMAKER_MEMORY_SOCKET": str(mine / "run" / "owner-memory" / "admin.sock"),
        },
    )
    assert "is the memoryd of the home" not in result.stderr, result.stderr
    assert [m.command for m in held.seen] == ["log"]  # asked, through the link
    other = tmp_path / "other"
    other.mkdir()
    link = tmp_path / "any-name.sock"
    link.symlink_to(held.path)
    result = runner.invoke(
        app,
        ["memory", "log"],
        env={"BOXMAKER_HOME": str(other), "BOXMAKER_MEMORY_SOCKET": str(link)},
    )
    assert result.exit_code == 1
    assert f"is the memoryd of the home {held.home}" in result.stderr


def test_ctrl_c_during_an_import_says_memoryd_stops_it(monkeypatch):
    """memoryd stops an import whose bxctl has gone between two batches: the line must not say
    it may still finish it."""
    from bxctl import reach

    monkeypatch.setitem(reach.SENT, "change", "import")
    line = reach.interrupted_line()
    assert line.startswith("interrupted; memoryd stops the import it was sent at the end of ")
    assert "may still finish" not in line
    assert "importing the same file again brings the rest" in line
