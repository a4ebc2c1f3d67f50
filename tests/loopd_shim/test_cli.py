"""The driver: each subcommand against loopd-shim on its control socket, and its error lines."""

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopd_shim.cli import app, format_result, parse_call
from proto.labels import Label
from proto.messages import ToolResultOut


def run(stack, *args):
    env = {"BOXMAKER_CONTROL_SOCKET": str(stack.config.control_socket)}
    return CliRunner(env=env).invoke(app, list(args))


@pytest.mark.parametrize(
    "spec, name, arguments",
    [
        ("clock", "clock", "{}"),
        ('recall {"query": "launch"}', "recall", '{"query": "launch"}'),
        (
            '  memory   {"action": "note", "text": "a b"} ',
            "memory",
            '{"action": "note", "text": "a b"}',
        ),
    ],
)
def test_parse_call(spec, name, arguments):
    call = parse_call(spec)
    assert (call.name, call.arguments) == (name, arguments)
    assert call.id.startswith("call-") and call.id != parse_call(spec).id


@pytest.mark.parametrize(
    "ok, label, output, expected",
    [
        (True, ("private", False), "hello", "recall c1: ok · private · trusted\nhello"),
        (
            False,
            ("public", True),
            "x\x1b[31m@all",
            "recall c1: refused · public · untrusted\nx\\x1b[31m@all",
        ),
    ],
)
def test_format_result_escapes_the_output(ok, label, output, expected):
    result = ToolResultOut(
        call_id="c1",
        name="recall",
        ok=ok,
        output=output,
        label=Label(klass=label[0], untrusted=label[1]),
    )
    assert format_result(result) == expected


def test_a_session_through_the_driver(stack):
    started = run(stack, "start", "--session", "s-cli")
    assert (started.exit_code, started.stdout) == (0, "s-cli\n")
    assert run(stack, "say", "s-cli", "When is the launch?").exit_code == 0

    answered = run(
        stack, "answer", "s-cli", "--call", 'recall {"query": "launch"}', "--call", "clock"
    )
    assert answered.exit_code == 0, answered.stderr
    blocks = answered.stdout.strip().split("\n\n")
    assert blocks[0].startswith("recall call-") and ": ok · private · trusted\n" in blocks[0]
    assert blocks[0].endswith('(no matches for "launch")')
    assert blocks[1].startswith("clock call-") and ": ok · public · trusted\n" in blocks[1]
    assert stack.memoryd.updated == []

    finished = run(stack, "answer", "s-cli", "Nothing on record yet.")
    assert (finished.exit_code, finished.stdout) == (0, "")
    assert stack.memoryd.updated == ["s-cli"]

    shown = CliRunner(env={"BOXMAKER_HOME": str(stack.config.home)}).invoke(
        app, ["baseline", "s-cli"]
    )
    saved = json.loads((stack.config.sessions / "s-cli" / "0.baseline.json").read_text())
    assert shown.stdout == saved["system"] + "\n"
    tools = CliRunner().invoke(
        app, ["baseline", "s-cli", "--tools", "--home", str(stack.config.home)]
    )
    assert json.loads(tools.stdout) == saved["tools"]


def test_start_new_id_is_generated(stack):
    first, second = run(stack, "start"), run(stack, "start")
    assert first.stdout.startswith("s-") and first.stdout != second.stdout
    assert (stack.config.sessions / first.stdout.strip() / "0.baseline.json").is_file()


@pytest.mark.parametrize(
    "args, error",
    [
        (["say", "s-none", "hi"], "no session s-none"),
        (["answer", "s-none"], "needs content or tool calls"),
        (["say", "../etc", "hi"], "session"),
        (["baseline", "s-none"], "no session s-none"),
    ],
)
def test_errors_are_one_line_and_exit_non_zero(stack, args, error):
    result = (
        run(stack, *args)
        if args[0] != "baseline"
        else run(stack, *args, "--home", str(stack.config.home))
    )
    assert result.exit_code != 0
    assert error in result.stderr and result.stderr.count("\n") == 1 and result.stdout == ""


def test_memory_unavailable_is_printed(stack):
    stack.memoryd.refuse = "soul.md cannot be read"
    result = run(stack, "start")
    assert result.exit_code == 1
    assert result.stderr == (
        "loopd-shim: memory is unavailable, so the session was not started: "
        "soul.md cannot be read (runbook: memory-unavailable)\n"
    )


def test_nothing_answers_on_the_control_socket(home):
    result = CliRunner(env={"BOXMAKER_HOME": str(home)}).invoke(app, ["start"])
    assert result.exit_code == 1
    assert "nothing answers on" in result.stderr and "control.sock" in result.stderr


def test_nothing_answers_points_at_the_runbook_and_stack_status(home):
    result = CliRunner(env={"BOXMAKER_HOME": str(home)}).invoke(app, ["start"])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert "scripts/stack status" in result.stderr
    assert result.stderr.rstrip().endswith("(runbook: loopd-unreachable)")


def test_unknown_session_says_how_to_start_it(stack):
    result = run(stack, "answer", "nosuch", "hello")
    assert result.exit_code == 1
    assert "loopd-shim start --session nosuch" in result.stderr


def test_a_refused_call_exits_1_and_still_prints_its_result(stack):
    run(stack, "start", "--session", "s-refused")
    result = run(stack, "answer", "s-refused", "--call", "no_such_tool {}", "--call", "clock")
    assert result.exit_code == 1
    blocks = result.stdout.strip().split("\n\n")
    assert ": refused · " in blocks[0] and ": ok · " in blocks[1]
    fine = run(stack, "answer", "s-refused", "--call", "clock")
    assert fine.exit_code == 0, fine.stderr


def test_an_error_from_a_role_in_a_container_names_the_host_path(stack, monkeypatch):
    stack.memoryd.refuse = "nothing answers on /var/lib/boxmaker/run/loop-memory/memory.sock"
    result = CliRunner(
        env={
            "BOXMAKER_CONTROL_SOCKET": str(stack.config.control_socket),
            "BOXMAKER_HOME": str(stack.config.home),
        }
    ).invoke(app, ["start"])
    assert result.exit_code == 1
    assert f"{stack.config.home}/run/loop-memory/memory.sock" in result.stderr
    assert "/var/lib/boxmaker" not in result.stderr


def test_serve_that_cannot_start_exits_2_as_every_role(tmp_path):
    config = tmp_path / "loopd.toml"
    config.write_text("[memory]\nsokcet = 'x'\n")
    result = CliRunner().invoke(app, ["serve", "--config", str(config)])
    assert result.exit_code == 2
    assert result.stderr == f"loopd-shim: {config}: unknown key sokcet in [memory]\n"


@pytest.fixture
def own_home():
    """A home of the owner's own, beside the stack's (which the home fixture is)."""
    path = Path(tempfile.mkdtemp(prefix="lsown-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_control_socket_of_another_home_is_refused_naming_both(stack, own_home):
    """A $BOXMAKER_CONTROL_SOCKET left from another stack: the session would start in that home,
    with its memory and writes, while the owner's home is $BOXMAKER_HOME."""
    theirs, home = stack.config.home, own_home
    result = CliRunner(
        env={
            "BOXMAKER_CONTROL_SOCKET": str(stack.config.control_socket),
            "BOXMAKER_HOME": str(home),
        }
    ).invoke(app, ["start", "--session", "mine"])
    assert result.exit_code == 1 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert f"is the loopd-shim of the home {theirs}, but BOXMAKER_HOME is {home}" in line, line
    assert line.endswith("nothing was done (runbook: wrong-socket)"), line
    assert not (theirs / "sessions" / "mine").exists()
    # A link at the own home's usual place is that home's socket, whatever it points to (bxctl
    # takes its memory socket so too): the owner made it.
    link = home / "run" / "loop-control" / "control.sock"
    link.parent.mkdir(parents=True)
    link.symlink_to(stack.config.control_socket)
    result = CliRunner(env={"BOXMAKER_HOME": str(home)}).invoke(
        app, ["start", "--control-socket", str(link)]
    )
    assert result.exit_code == 0, result.stderr


def test_a_control_socket_that_is_a_file_is_named_as_such(home):
    path = home / "control.sock"
    path.write_text("")
    result = CliRunner(env={"BOXMAKER_HOME": str(home)}).invoke(
        app, ["start", "--control-socket", str(path)]
    )
    assert result.exit_code == 1
    assert result.stderr == (
        f"loopd-shim: {path} is a file, not a socket: --control-socket (or"
        " $BOXMAKER_CONTROL_SOCKET) must name loopd-shim's control socket,"
        " $BOXMAKER_HOME/run/loop-control/control.sock (runbook: wrong-socket)\n"
    )
