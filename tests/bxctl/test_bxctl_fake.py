"""bxctl against a fake memoryd socket: what it sends, what it prints, how it fails."""

import pytest
from typer.testing import CliRunner

from bxctl.cli import app
from proto.messages import MemoryAdmin, MemoryAdminReply, Reindex, Reindexed
from tests.fakepeer import served_owner


class Refused(Exception):
    pass


class FakeMemoryd:
    """Records every request; answers from a table."""

    def __init__(self):
        self.seen: list = []
        self.wrong_kind = False  # answer each request with the other request's reply

    async def handle(self, message):
        self.seen.append(message)
        if self.wrong_kind:
            if isinstance(message, Reindex):
                return MemoryAdminReply(text="not counts")
            return Reindexed(logs=1, records=2, notes=3)
        if isinstance(message, Reindex):
            return Reindexed(logs=42, records=1208, notes=7)
        if isinstance(message, MemoryAdmin):
            if message.arg == "2026-01-01-0009":
                raise Refused("2026-01-01-0009 is not the latest edit of memory.md")
            return MemoryAdminReply(text=f"{message.command}:{message.arg} @here <b>\x1b[2J")
        raise Refused("unexpected")


@pytest.fixture
def fake(tmp_path):
    path = tmp_path / "run" / "owner-memory" / "admin.sock"
    memoryd = FakeMemoryd()
    with served_owner(path, memoryd.handle, (Refused,)):
        memoryd.home = tmp_path
        memoryd.path = path
        yield memoryd


runner = CliRunner()


def test_reindex_prints_counts_with_separators(fake):
    result = runner.invoke(app, ["reindex", "--memory-socket", str(fake.path)])
    assert result.exit_code == 0, result.output
    # Then the index state, for what the new index left out: a memoryd answering no state
    # leaves those counts not known, said so after the spec's sentence, never as 0.
    assert result.stdout == (
        "reindexed: 42 logs, 1,208 records, 7 notes; session logs left aside or not indexed: "
        "not known (memoryd did not answer for its index; bxctl memory stats names them)\n"
    )
    assert fake.seen[0] == Reindex()
    assert [type(m) for m in fake.seen[1:]] == [MemoryAdmin]
    assert fake.seen[1].command == "stats"


@pytest.mark.parametrize(
    "argv,sent",
    [
        (["memory", "log"], MemoryAdmin(command="log", arg="10")),
        (["memory", "log", "3"], MemoryAdmin(command="log", arg="3")),
        (["memory", "undo", "2026-09-24-0001"], MemoryAdmin(command="undo", arg="2026-09-24-0001")),
        (["memory", "pending"], MemoryAdmin(command="pending", arg="")),
        (
            ["memory", "accept", "p-2026-09-24-0001"],
            MemoryAdmin(command="accept", arg="p-2026-09-24-0001"),
        ),
        (
            ["memory", "reject", "p-2026-09-24-0002"],
            MemoryAdmin(command="reject", arg="p-2026-09-24-0002"),
        ),
    ],
)
def test_memory_commands_send_and_print_escaped(fake, argv, sent):
    # The default socket comes from $BOXMAKER_HOME.
    result = runner.invoke(app, argv, env={"BOXMAKER_HOME": str(fake.home)})
    assert result.exit_code == 0, result.output
    assert fake.seen == [sent]
    assert result.stdout == f"{sent.command}:{sent.arg} \\@here \\<b\\>\\x1b\\[2J\n"


@pytest.mark.parametrize(
    "argv,expected",
    [(["reindex"], "not reindexed"), (["memory", "log", "1"], "answered reindexed")],
)
def test_reply_of_another_kind_is_a_bad_answer(fake, argv, expected):
    fake.wrong_kind = True
    result = runner.invoke(app, [*argv, "--memory-socket", str(fake.path)])
    assert result.exit_code == 1
    assert isinstance(result.exception, SystemExit)  # a message, not a traceback
    assert "bad answer from memoryd" in result.stderr
    assert expected in result.stderr


def test_socket_from_envvar(fake):
    result = runner.invoke(
        app, ["memory", "log", "1"], env={"BOXMAKER_MEMORY_SOCKET": str(fake.path)}
    )
    assert result.exit_code == 0
    assert fake.seen == [MemoryAdmin(command="log", arg="1")]


def test_refusal_is_one_line_and_exit_1(fake):
    result = runner.invoke(
        app, ["memory", "undo", "2026-01-01-0009", "--memory-socket", str(fake.path)]
    )
    assert result.exit_code == 1
    assert result.stderr == "bxctl: 2026-01-01-0009 is not the latest edit of memory.md\n"


def test_memoryd_absent_names_socket_and_runbook(tmp_path):
    sock = tmp_path / "none" / "admin.sock"
    result = runner.invoke(app, ["memory", "log", "--memory-socket", str(sock)])
    assert result.exit_code == 3
    assert str(sock) in result.stderr
    assert "runbook: memoryd-unreachable" in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("kind", ["file", "missing", "folder"])
def test_a_home_that_is_not_a_folder_is_named_not_memoryd(tmp_path, kind):
    home = tmp_path / "home"
    if kind == "file":
        home.write_text("not a folder")
    elif kind == "folder":
        home.mkdir()
    result = runner.invoke(app, ["memory", "log"], env={"BOXMAKER_HOME": str(home)})
    assert result.exit_code == 3
    [line] = result.stderr.splitlines()
    if kind == "folder":  # a real home with nothing serving: memoryd is what is missing
        assert "memoryd is not answering" in line and "BOXMAKER_HOME" not in line
    else:
        said = "is not a folder" if kind == "file" else "does not exist"
        assert line.startswith(f"bxctl: BOXMAKER_HOME={home} {said}"), line


@pytest.mark.parametrize("kind", ["file", "missing"])
def test_no_home_set_and_no_default_home_says_so_not_memoryd(tmp_path, monkeypatch, kind):
    """A new terminal before the line scripts/stack up printed: bxctl looks in the default home,
    which is not there; the line says the variable is unset, not that memoryd is down."""
    default = tmp_path / "var-lib-boxmaker"
    if kind == "file":
        default.write_text("not a folder")
    monkeypatch.setattr("proto.config.DEFAULT_HOME", default)
    result = runner.invoke(app, ["memory", "log"], env={"BOXMAKER_HOME": None})
    assert result.exit_code == 3
    [line] = result.stderr.splitlines()
    said = "is not a folder" if kind == "file" else "does not exist"
    assert line == (
        f"bxctl: BOXMAKER_HOME is not set and its default {default} {said}: export the line"
        " scripts/stack up printed (scripts/stack status names the home) or pass --memory-socket"
    ), line


@pytest.mark.parametrize("argv", [["memory", "log", "0"], ["memory", "log", "x"], ["memory"]])
def test_usage_errors(argv, tmp_path):
    result = runner.invoke(app, argv, env={"BOXMAKER_HOME": str(tmp_path)})
    assert result.exit_code == 2


def test_progress_display_shows_elapsed_time_until_done(capsys):
    import threading as th

    from bxctl.cli import _progress

    done = th.Event()
    timer = th.Timer(0.6, done.set)
    timer.start()
    _progress(done)
    err = capsys.readouterr().err
    assert "reindexing" in err and "s" in err
    assert err.endswith("\r")  # the line is cleared once the reindex answers
