"""The memory-mcp command.

    memory-mcp [--trust untrusted|trusted] [--class public|private|secret] [--home PATH]
               [--max-class public|private|secret] ...
        serve one MCP connection on stdio (what an MCP client runs)
    memory-mcp config-snippet --home PATH [--trust ...] [--class ...] [--max-class ...]
                              [--command PATH]
        print the JSON that registers the server in an MCP client's configuration
    memory-mcp trust-again --client NAME [--home PATH] [--state DIR]
        forget that the client's earlier connections read untrusted or secret memory (and what
        memoryd's recall log shows of them)

Log lines go to stderr, one per event (an MCP client keeps a server's stderr as its log); stdout
is the protocol's. An option that is wrong is one line on stderr and exit status 2; a missing SDK
is one line and exit status 1; a stdout closed from the start is one line and exit status 2; a
stdin closed from the start is one line and the end, as an empty stdin is. A
client that closes stdout (the pipe memory-mcp answers on) ends the connection as closing stdin
does: at the first answer that cannot be written, one log line, and memory-mcp exits
(stdout_wire.py); a stdout that fails otherwise (a full disk) is one line and exit status 1.
"""

import logging
import math
import os
import sys
import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from memory_mcp import logqueue, raised
from memory_mcp.keptfiles import kept_files
from memory_mcp.session import client_key
from memory_mcp.snippet import (
    NoCommand,
    NoHome,
    chosen_command,
    default_command,
    snippet,
    snippet_home,
)
from proto import outlost, usage
from proto.config import default_home
from proto.narrowterm import escape_what_cannot_be_shown
from proto.paths import BROKER_MEMORY_SOCKET, under
from proto.version import VersionOption, package_version

TIMEOUT = 30.0
TRUST_AGAIN_LOCK = 10.0  # seconds trust-again waits for a state folder another memory-mcp holds
log = logging.getLogger("memory_mcp.cli")
NO_SDK = "memory-mcp: the MCP SDK is not installed: pip install 'boxmaker-memory[mcp]'"
NO_STDOUT = "memory-mcp: stdout is closed: there is nowhere to answer an MCP client"
NO_STDIN = "memory-mcp: stdin is closed: no MCP client can send a request; nothing to serve"


class Trust(StrEnum):
    untrusted = "untrusted"
    trusted = "trusted"


class DataClass(StrEnum):
    public = "public"
    private = "private"
    secret = "secret"


app = typer.Typer(
    add_completion=False,
    help="boxmaker's memory as an MCP server on stdio (recall, memory, memory://block).",
)

HOME_HELP = "boxmaker's home (default $BOXMAKER_HOME, then /var/lib/boxmaker)"
HomeOption = Annotated[Path | None, typer.Option("--home", help=HOME_HELP)]
STATE_HELP = (
    "where each client's raised state is kept between its connections (default "
    "$XDG_STATE_HOME/boxmaker-memory-mcp, or ~/.local/state/boxmaker-memory-mcp)"
)
StateOption = Annotated[
    Path | None, typer.Option("--state", envvar="BOXMAKER_MCP_STATE", help=STATE_HELP)
]


def _timeout(value: float) -> float:
    if not math.isfinite(value) or value <= 0 or value > 3600:
        raise typer.BadParameter("must be above 0 and at most 3600 seconds")
    return value


@app.callback(invoke_without_command=True)
def main_command(
    ctx: typer.Context,
    trust: Annotated[
        Trust,
        typer.Option(
            "--trust",
            help="untrusted: identity adds become untrusted notes; trusted: the client reads no "
            "untrusted content (see the README)",
        ),
    ] = Trust.untrusted,
    klass: Annotated[
        DataClass, typer.Option("--class", help="the class of data the session carries")
    ] = DataClass.private,
    home: HomeOption = None,
    max_class: Annotated[
        DataClass,
        typer.Option(
            "--max-class",
            help="memoryd's [index] max_class: the block leaves out entries above it",
        ),
    ] = DataClass.private,
    broker_socket: Annotated[
        Path | None,
        typer.Option(
            "--broker-socket",
            help=f"memoryd's brokerd socket (default {{home}}/{BROKER_MEMORY_SOCKET})",
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            callback=_timeout,
            help="seconds to wait for memoryd, and for reading the block from {home}/memory",
        ),
    ] = TIMEOUT,
    state: StateOption = None,
    version: VersionOption = False,
) -> None:
    """Serve one MCP connection on stdin and stdout until the client closes it."""
    if ctx.invoked_subcommand is not None:
        return
    logqueue.configure_role()
    if sys.stdout is None:  # fd 1 was closed before Python started: no client can be answered
        print(NO_STDOUT, file=sys.stderr)
        raise typer.Exit(2)
    if sys.stdin is None:  # fd 0 was closed before Python started: as a stdin at its end
        print(NO_STDIN, file=sys.stderr)
        return
    home = (home or default_home()).absolute()
    try:
        import anyio

        from memory_mcp.blockfiles import BlockFiles
        from memory_mcp.link import Memoryd
        from memory_mcp.server import MemoryMcp
        from memory_mcp.stdio import serve
    except ImportError:
        print(NO_SDK, file=sys.stderr)
        raise typer.Exit(1) from None
    memoryd = Memoryd(broker_socket or under(home, BROKER_MEMORY_SOCKET), timeout)
    block_files = BlockFiles(home, timeout, max_class=max_class.value)
    kept = ((state or raised.default_folder()).absolute(), home)
    handlers = MemoryMcp(memoryd, block_files, trust.value, klass.value, kept=kept)
    failed = ""
    try:
        try:
            anyio.run(serve, handlers, package_version())
        except* (BrokenPipeError, ConnectionResetError):
            log.info("the client closed stdout: the connection is over")
            _quiet_stdout()
        except* OSError as group:
            # stdout_wire and stdin_lines say what they meet; this is the line for what else the
            # system refuses (a stdio that cannot be claimed), rather than a traceback
            first = group.exceptions[0]
            failed = getattr(first, "strerror", None) or str(first)
    except KeyboardInterrupt:
        pass
    if failed:
        print(f"memory-mcp: the connection ended on a system error ({failed})", file=sys.stderr)
        raise typer.Exit(1)


def _quiet_stdout() -> None:
    """Point fd 1 at /dev/null: what is still buffered for the closed pipe cannot fail again at
    exit (Python reports that on stderr, the client's log)."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)


TRUSTED_WARNING = (
    "memory-mcp: a trusted registration promises that the client's model reads nothing untrusted "
    "(no web pages, e-mail or others' files): what it remembers reaches every future prompt; if "
    "in doubt, register it untrusted"
)


@app.command("config-snippet")
def config_snippet(
    home: HomeOption = None,
    trust: Annotated[Trust, typer.Option("--trust")] = Trust.untrusted,
    klass: Annotated[DataClass, typer.Option("--class")] = DataClass.private,
    max_class: Annotated[DataClass, typer.Option("--max-class")] = DataClass.private,
    command: Annotated[str | None, typer.Option("--command", help="the memory-mcp to run")] = None,
) -> None:
    """Print the JSON that registers this server in an MCP client's configuration."""
    try:
        chosen = snippet_home(home, os.environ)
        program = default_command() if command is None else chosen_command(command)
    except (NoHome, NoCommand) as e:
        print(f"memory-mcp: {e}", file=sys.stderr)
        raise typer.Exit(2) from None
    outlost.echo(snippet(program, chosen, trust.value, klass.value, max_class.value))
    if trust is Trust.trusted:
        # on stderr, so that stdout stays the JSON an owner pipes into a client's configuration
        print(TRUSTED_WARNING, file=sys.stderr)


@app.command("trust-again")
def trust_again(
    client: Annotated[str, typer.Option("--client", help="the client's name, as it gives it")],
    home: HomeOption = None,
    state: StateOption = None,
) -> None:
    """Let the client's next connection start as registered again: its conversations that saw
    untrusted or secret memory are gone."""
    home = (home or default_home()).absolute()
    key = client_key(client)
    # the home's names, whatever spelling of it the owner gives (keptfiles.py)
    kept = kept_files((state or raised.default_folder()).absolute(), home, key)
    try:
        raised_before = raised.forget(kept, time.monotonic() + TRUST_AGAIN_LOCK)
    except OSError as e:
        why = e.strerror or e
        print(f"memory-mcp: cannot keep a clean state in {kept.primary}: {why}", file=sys.stderr)
        raise typer.Exit(1) from None
    outlost.done(f"client {key}: its next connection starts as registered")
    if raised_before:
        outlost.echo(f"client {key}: its next connection starts as registered")
    else:
        outlost.echo(
            f"client {key}: nothing raised was kept for it on {home}; its next connection starts "
            "as registered (memoryd's recall log is no longer read for it)"
        )


def main() -> None:
    if sys.stderr is None:
        # fd 2 was closed before Python started: print(file=None) would say a refusal on stdout,
        # the protocol's; /dev/null takes fd 2 (the lowest free), so nothing else lands there
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (for the whole process)
    # a home, a client's name or a log line in any language, on a terminal in any locale; the
    # protocol's stdout is written as UTF-8 bytes (stdout_wire), which this leaves alone
    escape_what_cannot_be_shown()
    # a usage error, or output that cannot be written (config-snippet, --help on a full disk),
    # in one line as every role's
    usage.run(app, "memory-mcp")
