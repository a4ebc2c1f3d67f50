"""bxctl when things go wrong around it: odd answers on the socket, a request too long to send, an
editor it cannot run, a socket path too long, output it cannot write, usage errors. Each is one
line on stderr and a non-zero exit, never a traceback."""

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bxctl import reach, usage
from bxctl.cli import app
from proto.client import SOCKET_PATH_MAX, arequest, request
from proto.errors import FrameTimeout, PeerClosed, UnexpectedReply, Unreachable
from proto.messages import ADMIN_ARG_MAX, MemoryAdmin, MemoryAdminReply
from proto.server import serve_unix

runner = CliRunner()


class Answers:
    """memory_admin answered from a table of texts by command; every request kept."""

    def __init__(self, home: Path):
        self.home = home
        self.path = home / "run" / "owner-memory" / "admin.sock"
        self.seen: list[MemoryAdmin] = []
        self.texts: dict[str, str] = {}

    async def handle(self, message):
        self.seen.append(message)
        return MemoryAdminReply(text=self.texts.get(message.command, '{"message": "done"}'))


@pytest.fixture
def answers(tmp_path):
    fake = Answers(tmp_path)
    (tmp_path / "backups").mkdir()
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(
        serve_unix(fake.path, fake.handle, {"memory_admin"}, name="fake")
    )
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield fake
    loop.call_soon_threadsafe(server.close)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


def bx(fake: Answers, *argv: str, **env: str | None):
    return runner.invoke(app, list(argv), env={"BOXMAKER_HOME": str(fake.home), **env})


def one_line(result, code: int = 1) -> str:
    assert result.exit_code == code, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception  # not a traceback
    [line] = result.stderr.splitlines()
    assert line.startswith("bxctl: "), line
    return line


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("argv", "command", "text"),
    [
        (["memory", "edit", "memory"], "file", "[1,2]"),
        (["memory", "edit", "memory"], "file", '{"file": "memory.md", "text": 3, "base": "x"}'),
        (["memory", "export"], "export", "[1,2]"),
        (["memory", "export"], "export", '{"message": "m", "path": "/etc/passwd"}'),
        (["memory", "backup"], "backup", '{"message": 7, "path": "x"}'),
        (["memory", "forget", "note:1"], "forget", '{"message": "m", "texts": [1], "check": "c"}'),
        (["memory", "show", "2026-01-01-0001", "--json"], "show", DEEP),
        (["memory", "log", "--json"], "log", DEEP),
    ],
)
def test_an_answer_of_the_wrong_shape_is_a_bad_answer(answers, argv, command, text):
    answers.texts[command] = text
    line = one_line(bx(answers, *argv, EDITOR="true"))
    assert line.startswith("bxctl: bad answer from memoryd"), line


def test_a_request_too_long_to_send_is_not_sent(answers, monkeypatch):
    monkeypatch.setattr(usage, "FORGET_REF_MAX", 10**6)  # past what the owner may type
    line = one_line(bx(answers, "memory", "forget", "\x01" * 50_000, "--yes"))
    assert f"over the {ADMIN_ARG_MAX:,} one request may carry; nothing was sent" in line
    assert answers.seen == []


def test_an_edit_too_long_to_send_keeps_the_copy(answers):
    text = "\x01" * 50_000  # 300,000 characters once written as JSON
    answers.texts["file"] = json.dumps({"file": "memory.md", "text": text, "base": "0" * 64})
    result = bx(answers, "memory", "edit", "memory", EDITOR="true")
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    refused, kept = result.stderr.splitlines()
    assert "nothing was sent" in refused
    copy = Path(kept.removeprefix("bxctl: your copy is kept at "))
    try:
        assert copy.read_text() == text
    finally:
        shutil.rmtree(copy.parent)
    assert [m.command for m in answers.seen] == ["file"]


@pytest.mark.parametrize(
    ("error", "code", "said", "in_doubt"),
    [
        (Unreachable("nothing answers"), 3, "bxctl: memoryd is not answering on ", False),
        (PeerClosed("closed the connection"), 3, "bxctl: memoryd closed the connection on ", True),
        (FrameTimeout("no reply"), 3, "bxctl: memoryd did not answer on ", True),
        (
            UnexpectedReply("answered ok, not memory_admin_reply", "Ok"),
            1,
            "bxctl: bad answer ",
            False,
        ),
    ],
)
def test_an_edit_memoryd_does_not_answer_keeps_the_copy_and_names_it(
    answers, monkeypatch, error, code, said, in_doubt
):
    answers.texts["file"] = json.dumps({"file": "memory.md", "text": "- one\n", "base": "0" * 64})

    def gone_at_the_save(path, message, **kwargs):
        if message.command == "edit":
            raise error
        return request(path, message, **kwargs)

    monkeypatch.setattr(reach, "request", gone_at_the_save)
    result = bx(answers, "memory", "edit", "memory", EDITOR="true")
    assert result.exit_code == code and isinstance(result.exception, SystemExit), result.output
    failed, kept = result.stderr.splitlines()
    assert failed.startswith(said), failed
    # memoryd received the edit and may have saved it before it went quiet: the owner is told.
    doubt = "the edit it was sent may have been applied or may still be: bxctl memory log shows"
    assert (doubt in failed) == in_doubt, failed
    copy = Path(kept.removeprefix("bxctl: your copy is kept at "))
    try:
        assert copy.read_text() == "- one\n"
    finally:
        shutil.rmtree(copy.parent)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["memory", "search", "caf\udce9"], "'query': a query is not valid UTF-8 (byte 0xe9)"),
        (["memory", "show", "\udcff"], "'ID': an edit id is not valid UTF-8 (byte 0xff)"),
        (
            ["memory", "forget", "note:\udcff", "--yes"],
            "'ID': an ID is not valid UTF-8 (byte 0xff)",
        ),
        (
            ["memory", "promote", "note:\udcff", "--file", "memory"],
            "'REF': a REF is not valid UTF-8 (byte 0xff)",
        ),
        (["memory", "undo", "\udcff"], "'ID': an edit id is not valid UTF-8 (byte 0xff)"),
        (
            ["memory", "log", "--from", "\udcff"],
            "'--from': an edit id is not valid UTF-8 (byte 0xff)",
        ),
    ],
)
def test_an_argument_not_valid_utf8_is_a_usage_error_and_not_sent(answers, argv, said):
    # argv as Python holds bytes that are not UTF-8: each such byte a surrogate escape
    line = usage_line(answers, *argv)
    assert line.startswith(f"bxctl: Invalid value for {said} (see: "), line
    assert answers.seen == []


def test_a_message_that_cannot_be_made_is_one_line_not_a_traceback(tmp_path):
    prelude = (
        "import bxctl.common as c, bxctl.usage as u; c.not_utf8 = lambda arg: None; "
        "u.query = lambda value: value; "
    )
    result = run_bxctl("memory", "search", os.fsdecode(b"caf\xe9"), home=tmp_path, prelude=prelude)
    assert result.returncode == 1
    [line] = result.stderr.decode().splitlines()
    assert line.startswith("bxctl: could not make a MemoryAdmin message (arg: "), line
    assert line.endswith("); it was not sent"), line


@pytest.mark.parametrize(
    ("editor", "said"),
    [('"my editor', "$EDITOR cannot be read as a command"), ("   ", "$EDITOR names no command")],
)
def test_an_editor_that_cannot_be_read_is_one_line_before_anything_is_asked(answers, editor, said):
    line = one_line(bx(answers, "memory", "edit", "memory", EDITOR=editor, VISUAL=None))
    assert line.startswith(f"bxctl: {said}") and line.endswith("nothing was changed")
    assert answers.seen == []


def test_a_socket_path_too_long_is_said_so(answers, tmp_path):
    folder = tmp_path / ("d" * 120)
    folder.mkdir()
    (folder / "admin.sock").symlink_to(answers.path)
    line = one_line(bx(answers, "memory", "log", "--memory-socket", str(folder / "admin.sock")), 3)
    assert "longer than a Unix socket path may be (107)" in line and "not answering" not in line


@pytest.mark.parametrize(
    ("command", "ident"),
    [
        ("undo", '{"id": "2026-09-24-0001"}'),
        ("undo", "../x"),
        ("undo", "p-2026-09-24-0001"),
        ("show", "2026-09-24"),
        ("accept", "{x"),
        ("accept", "2026-09-24-0001"),
        ("reject", "/etc/passwd"),
        ("undo", "2026-09-24-0001" + "1" * 60),
    ],
)
def test_an_id_not_of_an_ids_shape_is_a_usage_error_and_not_sent(answers, command, ident):
    line = usage_line(answers, "memory", command, ident)
    assert line.startswith("bxctl: Invalid value for 'ID': "), line
    assert line.endswith(f" memory {command} --help)"), line
    assert answers.seen == []


def usage_line(fake: Answers, *argv: str) -> str:
    """The one line bxctl (its main, as the owner runs it) says of a usage error, exit 2."""
    result = run_bxctl(*argv, home=fake.home, stdout=subprocess.PIPE)
    assert result.returncode == 2, result.stderr
    assert result.stdout == b""
    [line] = result.stderr.decode(errors="surrogateescape").splitlines()
    return line


def test_an_empty_id_is_a_usage_error(answers):
    result = bx(answers, "memory", "undo", "")
    assert result.exit_code == 2 and answers.seen == []


def test_import_with_the_socket_alone_finds_the_home_it_lies_in(answers, tmp_path):
    export = tmp_path / "elsewhere" / "export.jsonl"
    export.parent.mkdir()
    export.write_text("{}\n")
    answers.texts["import"] = '{"message": "imported 0 entries", "lines": []}'
    result = runner.invoke(
        app,
        ["memory", "import", str(export), "--memory-socket", str(answers.path)],
        env={"BOXMAKER_HOME": None},
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "imported 0 entries\n"
    name = json.loads(answers.seen[0].arg)["name"]
    assert name.startswith(".incoming-") and list((tmp_path / "backups").iterdir()) == []


@pytest.mark.skipif(Path("/var/lib/boxmaker").exists(), reason="a real default home here")
def test_import_with_a_socket_elsewhere_and_no_home_says_what_it_needs(answers, tmp_path):
    link = tmp_path / "s.sock"
    link.symlink_to(answers.path)
    export = tmp_path / "export.jsonl"
    export.write_text("{}\n")
    result = runner.invoke(
        app,
        ["memory", "import", str(export), "--memory-socket", str(link)],
        env={"BOXMAKER_HOME": None},
    )
    line = one_line(result)
    assert "set BOXMAKER_HOME to memoryd's home" in line and "is memoryd set up" not in line
    assert answers.seen == []


@pytest.mark.parametrize("name", ["my backup.tar.gz", "é.tar.gz", "-x.tar.gz"])
def test_a_file_in_backups_under_a_name_memoryd_does_not_take_is_handed_over_as_a_copy(
    answers, name
):
    archive = answers.home / "backups" / name
    archive.write_bytes(b"archive")
    result = bx(answers, "memory", "restore", str(archive))
    assert result.exit_code == 0, result.output
    sent = json.loads(answers.seen[0].arg)["name"]
    assert sent.startswith(".incoming-") and sent.endswith(".tar.gz")
    assert sorted(p.name for p in (answers.home / "backups").iterdir()) == [name]


def test_paths_in_a_reply_print_as_they_are(answers):
    path = answers.home / "backups" / "_owner_.tar.gz"
    message = f"backup written to {path} (3 bytes): 0 entries"
    answers.texts["backup"] = json.dumps({"message": message, "path": str(path)})
    result = bx(answers, "memory", "backup")
    assert result.exit_code == 0, result.output
    assert result.stdout == message + "\n"


def test_an_export_removed_before_it_was_read_is_one_line(answers):
    path = answers.home / "backups" / "export-20261203T000000Z.jsonl"
    answers.texts["export"] = json.dumps({"message": "exported", "path": str(path)})
    line = one_line(bx(answers, "memory", "export"))
    assert "was removed before it could be read" in line


# --- the command itself: usage errors and output it cannot write (a real process) -------------


def run_bxctl(*argv: str, home: Path, prelude: str = "", **kwargs) -> subprocess.CompletedProcess:
    code = prelude + "from bxctl.cli import main; main()"
    env = {**os.environ, "BOXMAKER_HOME": str(home), "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("BOXMAKER_MEMORY_SOCKET", None)
    return subprocess.run(
        [sys.executable, "-c", code, *argv], stderr=subprocess.PIPE, env=env, timeout=60, **kwargs
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["memory", "log", "0"],
        ["memory", "search", "x", "-k", "0"],
        ["memory", "stats", "--days", "-1"],
        ["memory", "promote", "note:0"],
        ["memory", "undo", ""],
        ["memory", "no-such-command"],
        # a value wrong in itself, whatever the command: checked before memoryd is asked (there
        # is none here), never memoryd's refusal (exit 1)
        ["memory", "search", ""],
        ["memory", "search", "x" * 501],
        ["memory", "log", "--from", ""],
        ["memory", "log", "--from", "yesterday"],
        ["memory", "pending", "--from", "2026-09-24-0001"],
        ["memory", "show", ""],
        ["memory", "accept", "../x"],
        ["memory", "reject", ""],
        ["memory", "promote", "x", "--file", "soul"],
        ["memory", "promote", "", "--file", "memory"],
        ["memory", "edit", "notes"],
        ["memory", "export", "--format", "xml"],
        ["memory", "forget", "", "--yes"],
        ["memory", "forget", " ", "--yes"],
    ],
)
def test_a_usage_error_is_one_line_naming_the_help(tmp_path, argv):
    result = run_bxctl(*argv, home=tmp_path, stdout=subprocess.PIPE)
    assert result.returncode == 2
    [line] = result.stderr.decode().splitlines()
    assert line.startswith("bxctl: ") and line.endswith(" --help)"), line
    assert result.stdout == b""


def test_output_that_cannot_be_written_is_one_line_and_a_failure(tmp_path):
    with open("/dev/full", "w") as full:
        result = run_bxctl("--help", home=tmp_path, stdout=full)
    assert result.returncode == 4
    assert result.stderr.decode() == (
        "bxctl: the output could not be written: No space left on device; nothing was changed\n"
    )


def test_a_closed_stdout_is_a_failure_and_nothing_is_done(tmp_path):
    result = run_bxctl("memory", "log", home=tmp_path, preexec_fn=lambda: os.close(1))
    assert result.returncode == 1
    assert result.stderr.decode() == "bxctl: the standard output is closed; nothing was done\n"


def test_the_client_names_a_socket_path_too_long_as_the_cause(tmp_path):
    path = str(tmp_path / ("d" * 120) / "admin.sock")
    expected = f"longer than a Unix socket path may be ({SOCKET_PATH_MAX})"
    with pytest.raises(Unreachable) as sync:
        request(path, MemoryAdmin(command="log", arg=""), timeout=2)
    with pytest.raises(Unreachable) as in_async:
        asyncio.run(arequest(path, MemoryAdmin(command="log", arg=""), timeout=2))
    for error in (sync.value, in_async.value):
        assert expected in str(error) and "None" not in str(error)


@pytest.mark.parametrize(
    ("swap", "said"),
    [
        ("os.symlink(secret, path)", "a symbolic link"),
        ("os.mkfifo(path)", "a FIFO"),
    ],
    ids=["link", "fifo"],
)
def test_an_edit_whose_copy_the_editor_replaced_by_a_link_or_fifo_sends_nothing(
    answers, tmp_path, swap, said
):
    """What is read back goes into every prompt: never through a link (to /etc/shadow, run as
    root), never waiting on a FIFO."""
    secret = tmp_path / "secret"
    secret.write_text("root:$6$hash\n")
    editor = tmp_path / "editor.py"
    editor.write_text(
        f"import os, sys\nsecret = {str(secret)!r}\npath = sys.argv[1]\nos.unlink(path)\n{swap}\n"
    )
    answers.texts["file"] = json.dumps({"file": "memory.md", "text": "- one\n", "base": "0" * 64})
    result = bx(answers, "memory", "edit", "memory", EDITOR=f"{sys.executable} {editor}")
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    [line] = result.stderr.splitlines()
    assert line.startswith("bxctl: cannot read the copy ") and said in line, line
    assert [m.command for m in answers.seen] == ["file"]
    shutil.rmtree(Path(line.split("cannot read the copy ")[1].split(":")[0]).parent)


@pytest.mark.parametrize(
    "argv",
    [
        ["memory", "show", "2026-12-05-1234567890"],
        ["memory", "undo", "2026-12-05-" + "9" * 5000],
        ["memory", "accept", "p-2026-12-05-1234567890"],
    ],
)
def test_an_id_whose_number_memoryd_would_never_give_is_a_usage_error_and_not_sent(answers, argv):
    # memoryd hands out and reads numbers of 4 to 9 digits: a longer one names nothing there
    line = usage_line(answers, *argv)
    assert line.startswith("bxctl: Invalid value for 'ID': "), line
    assert answers.seen == []
