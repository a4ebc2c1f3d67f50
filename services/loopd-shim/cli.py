"""The loopd-shim command: serve, and the driver that plays the model on the control socket.

  loopd-shim serve [--config loopd.toml]
  loopd-shim start [--session ID]                       prints the session id
  loopd-shim say SESSION TEXT                           the owner speaks
  loopd-shim answer SESSION [TEXT] [--call 'NAME JSON']...
                                                        the assistant answers; prints tool results
  loopd-shim baseline SESSION [--tools]                 prints the saved system prompt (or tools)

Errors are one line on stderr and a non-zero exit; each says what to do or names a runbook page.
`answer` exits 1 when a tool call was refused (its result is still printed); the driver's other
errors exit 1; `serve` that cannot start exits 2 (EXIT_START_FAILED, as every role), and so does a
mistyped command, option or value (proto.usage says it in one line, as bxctl does). Output that
cannot be written (a full disk, a closed pipe) exits 4, as bxctl's, and the line says what was done
first: `start` names the session it started, `answer` each tool call, done or refused, so a
write that stands is never taken for one refused.
"""

import contextlib
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from loopd_shim.config import default_control_socket, load_config
from loopd_shim.errors import LoopdError
from loopd_shim.sessions import SessionStore
from proto import logline, outlost, usage
from proto.client import RemoteError, Reply, request
from proto.config import default_home, host_paths
from proto.errors import FrameTimeout, ProtoError, UnexpectedReply, Unreachable
from proto.escape import escape
from proto.messages import (
    AssistantMessage,
    AssistantResults,
    Body,
    OwnerMessage,
    SessionStart,
    SessionStarted,
    ToolCall,
    ToolResultOut,
    describe,
)
from proto.narrowterm import escape_what_cannot_be_shown
from proto.paths import LOOP_CONTROL_SOCKET
from proto.silent import Silence, silence
from proto.version import VersionOption

# brokerd-shim may wait 30 seconds for memoryd, and an answer can hold several calls.
DRIVER_TIMEOUT = 300.0

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__.split("\n\n")[0])


@app.callback()
def _root(version: VersionOption = False) -> None:
    """The loopd-shim command: serve, and the driver that plays the model."""


ControlSocket = Annotated[
    Path | None,
    typer.Option(
        "--control-socket",
        envvar="BOXMAKER_CONTROL_SOCKET",
        help=f"default: {{home}}/{LOOP_CONTROL_SOCKET}, home from $BOXMAKER_HOME",
    ),
]


def _fail(text: str, code: int = 1) -> typer.Exit:
    typer.echo(f"loopd-shim: {escape(host_paths(text, default_home()), markup=False)}", err=True)
    return typer.Exit(code)


def _socket_home(path: Path) -> Path | None:
    """The home a control socket lies in at its usual place ({home}/run/loop-control/
    control.sock), or None when it lies elsewhere."""
    parts, tail = Path(os.path.abspath(path)).parts, LOOP_CONTROL_SOCKET.parts
    if len(parts) > len(tail) and parts[-len(tail) :] == tail:
        return Path(*parts[: -len(tail)])
    return None


def _refuse_other_home(control_socket: Path | None) -> None:
    """Exit, before loopd-shim is asked, when the socket given lies at its usual place in another
    home than $BOXMAKER_HOME: a variable left from another stack would start the session in that
    home, with that home's memory in its prompt and its writes landing there, while bxctl and
    the owner look at this one (bxctl refuses the same mistake with its memory socket)."""
    if control_socket is None or not os.environ.get("BOXMAKER_HOME"):
        return
    home = default_home()
    with contextlib.suppress(OSError):
        if os.path.samefile(control_socket, default_control_socket(home)):
            return  # this home's own socket, by whatever path (a link on the way)
    named = (control_socket, Path(os.path.realpath(control_socket)))
    others = [h for h in map(_socket_home, named) if h is not None]
    theirs = next((h for h in others if os.path.realpath(h) != os.path.realpath(home)), None)
    if theirs is not None:
        raise _fail(
            f"--control-socket (or $BOXMAKER_CONTROL_SOCKET) {control_socket} is the loopd-shim"
            f" of the home {theirs}, but BOXMAKER_HOME is {home}: set BOXMAKER_HOME to that home"
            " or leave out --control-socket and unset BOXMAKER_CONTROL_SOCKET; nothing was done"
            " (runbook: wrong-socket)"
        )


def _not_a_socket(path: Path) -> str | None:
    """Why path can be no control socket (it is a file or a folder), or None."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISSOCK(mode):
        return None
    kind = "a folder" if stat.S_ISDIR(mode) else "a file"
    return (
        f"{path} is {kind}, not a socket: --control-socket (or $BOXMAKER_CONTROL_SOCKET) must name"
        f" loopd-shim's control socket, $BOXMAKER_HOME/{LOOP_CONTROL_SOCKET}"
        " (runbook: wrong-socket)"
    )


def _ask(control_socket: Path | None, message: Body, reply: type[Reply]) -> Reply:
    _refuse_other_home(control_socket)
    path = control_socket or default_control_socket(default_home())
    try:
        return request(path, message, timeout=DRIVER_TIMEOUT, reply=reply)
    except UnexpectedReply as e:
        raise _fail(f"unexpected reply {e.got}") from None
    except Unreachable as e:
        raise _fail(_not_a_socket(path) or _silent(path, e)) from None
    except RemoteError as e:
        raise _fail(str(e)) from None
    except FrameTimeout:
        raise _fail(
            f"loopd-shim is running but busy: it took the request on {path} and did not answer in"
            f" {DRIVER_TIMEOUT:g} seconds, so what was asked may or may not have been done: see"
            " scripts/stack logs loopd-shim, and try again once it answers"
            " (runbook: loopd-unreachable)"
        ) from None
    except ProtoError as e:
        raise _fail(f"{e} (runbook: loopd-unreachable)") from None


def _silent(path: Path, e: Unreachable) -> str:
    """What the owner does when the control socket could not be reached: start the stack when
    loopd-shim is not running, try again when it is busy (told apart by proto.silent)."""
    why = silence(path)
    then = "nothing was done: start the stack with scripts/stack up (scripts/stack status says"
    if why is Silence.NO_SOCKET:
        return (
            f"loopd-shim is not running: nothing answers on {path}: there is no socket there;"
            f" {then} what runs) (runbook: loopd-unreachable)"
        )
    if why is Silence.REFUSED:
        return (
            f"loopd-shim is not running: nothing answers on {path}: nobody listens on it (a"
            f" socket left by a loopd-shim that stopped); {then} what runs)"
            " (runbook: loopd-unreachable)"
        )
    if why is Silence.BUSY:
        return (
            f"loopd-shim is running but busy: {path} takes no more connections now (every one it"
            " holds is taken and its queue is full); nothing was done: try again in a few"
            " seconds, and if it stays busy see scripts/stack logs loopd-shim"
            " (runbook: loopd-unreachable)"
        )
    return f"{e}; is the stack up? See scripts/stack status (runbook: loopd-unreachable)"


def parse_call(spec: str) -> ToolCall:
    """--call 'NAME JSON' (JSON optional, {} when absent) as a tool call with a fresh id."""
    name, _, arguments = spec.strip().partition(" ")
    if not name:
        raise _fail("--call needs a tool name: --call 'NAME JSON'")
    call_id = f"call-{secrets.token_hex(4)}"
    return _message(ToolCall, id=call_id, name=name, arguments=arguments.strip() or "{}")


def answered(results: list[ToolResultOut]) -> str:
    """What an answer did, for the line said when its results cannot be printed: each call,
    done or refused (a memory write done stands: bxctl memory log shows it)."""
    if not results:
        return "the answer was given"
    each = ", ".join(f"{r.name} {r.call_id} {'done' if r.ok else 'refused'}" for r in results)
    return f"the answer was given and its tool calls answered ({each})"


def format_result(result: ToolResultOut) -> str:
    """One tool result for a terminal: the tool, ok or refused, the label, the escaped output."""
    trust = "untrusted" if result.label.untrusted else "trusted"
    outcome = "ok" if result.ok else "refused"
    head = f"{result.name} {result.call_id}: {outcome} · {result.label.klass} · {trust}"
    return head + "\n" + escape(result.output, markup=False)


@app.command()
def serve(
    config: Annotated[
        Path | None, typer.Option("--config", help="loopd.toml", readable=False)
    ] = None,
) -> None:
    """Serve the control socket (talks to memoryd and brokerd-shim)."""
    from loopd_shim.server import run

    logline.configure_role(rotate=True)
    try:
        run(load_config(config))
    except (LoopdError, ProtoError) as e:
        raise _fail(str(e), logline.EXIT_START_FAILED) from None
    except OSError as e:  # the home or the socket's folder cannot be made, the socket not bound
        where = f"{e.filename}: " if e.filename else ""
        raise _fail(f"cannot start: {where}{e.strerror or e}", logline.EXIT_START_FAILED) from None
    except KeyboardInterrupt:
        pass


@app.command()
def start(
    session: Annotated[str | None, typer.Option("--session", help="default: a new id")] = None,
    control_socket: ControlSocket = None,
) -> None:
    """Start a session: freeze its baseline with the memory block; print its id."""
    reply = _ask(control_socket, _message(SessionStart, session=session), SessionStarted)
    outlost.done(f"session {reply.session} was started")
    outlost.echo(reply.session)


@app.command()
def say(session: str, text: str, control_socket: ControlSocket = None) -> None:
    """Say something as the owner."""
    _ask(control_socket, _message(OwnerMessage, session=session, content=text), Body)


@app.command()
def answer(
    session: str,
    text: Annotated[str | None, typer.Argument()] = None,
    call: Annotated[
        list[str] | None, typer.Option("--call", help="'NAME JSON', repeatable")
    ] = None,
    control_socket: ControlSocket = None,
) -> None:
    """Answer as the assistant, with content and/or tool calls; print each tool result."""
    calls = [parse_call(spec) for spec in call or ()]
    message = _message(AssistantMessage, session=session, content=text, tool_calls=calls)
    reply = _ask(control_socket, message, AssistantResults)
    outlost.done(answered(reply.results))
    printed = "\n\n".join(format_result(result) for result in reply.results)
    if calls:
        outlost.echo(printed)
    if any(not result.ok for result in reply.results):
        raise typer.Exit(1)


@app.command()
def baseline(
    session: str,
    tools: Annotated[bool, typer.Option("--tools", help="print the tool schemas instead")] = False,
    home: Annotated[Path | None, typer.Option("--home", envvar="BOXMAKER_HOME")] = None,
) -> None:
    """Print a session's saved system prompt, read from its 0.baseline.json."""
    try:
        saved = SessionStore((home or default_home()) / "sessions").baseline(session)
    except (LoopdError, OSError, ValueError) as e:
        raise _fail(str(e)) from None
    if tools:
        outlost.echo(json.dumps(saved["tools"], indent=1, ensure_ascii=False))
    else:
        outlost.echo(saved["system"])


def _message(model, **fields):
    """A control message, or one line on stderr when the fields do not validate."""
    try:
        return model(**fields)
    except ValidationError as e:
        raise _fail(describe(e)) from None


def main() -> None:
    escape_what_cannot_be_shown()  # a tool result in any language, on a terminal in any locale
    usage.run(app, "loopd-shim")


if __name__ == "__main__":
    main()
