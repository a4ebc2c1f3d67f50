"""A usage error of a role's command line as one line, and the run that says it so.

typer's own handler answers a mistyped option, command or value with the usage, a "Try --help"
line and a boxed message wrapped to the terminal: four lines or more, where the README promises
that errors are one line and a non-zero exit. memoryd, brokerd-shim and loopd-shim run their
commands through run() so a slip reads as bxctl's and memory-mcp's do:
"loopd-shim: No such command 'sya'. (see: loopd-shim --help)", exit 2 as typer's. Output that
cannot be written (a full disk, a closed pipe: --help, --version or a command's answer) is one line
and exit 4, as bxctl's (proto.outlost), never a traceback.

An error line goes to stderr and never to stdout: started with fd 2 closed, Python sets sys.stderr
to None, and print(file=None) writes to stdout, the file the owner sent the answer to (a prompt,
an export). run() points fd 2 at /dev/null first, so that a failing command still fails by its
status, without a word, and a command that works is not refused for it.
"""

import os
import sys
from typing import NoReturn

import typer

from proto import outlost
from proto.escape import escape

# click's status for an abort (end of input at a prompt) in standalone mode
EXIT_ABORTED = 1


def usage_line(prog: str, e: typer.TyperException) -> str:
    """typer's error as one line naming the mistake and where the help is. What the owner typed
    is in it, so a control character is shown as an escape, never sent to the terminal; a
    backslash stays single, as typer quotes a name with repr() and has escaped it already."""
    words = " ".join(e.format_message().split())
    message = "".join(ch if ch == "\\" else escape(ch, markup=False) for ch in words)
    ctx = getattr(e, "ctx", None)
    where = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
    return f"{prog}: {message}{where}"


def stderr_or_null() -> None:
    """When fd 2 was closed before Python started (sys.stderr is None), /dev/null takes fd 2 and
    sys.stderr writes there: no line meant for stderr can reach stdout, and no file opened later
    takes fd 2 for what a library writes there."""
    if sys.stderr is not None:
        return
    try:
        os.fstat(2)
    except OSError:
        null = os.open(os.devnull, os.O_WRONLY)  # the lowest free: 0 or 1 if closed too
        if null != 2:
            os.dup2(null, 2)
            os.close(null)
    sys.stderr = open(os.devnull, "w", encoding="utf-8", errors="backslashreplace")  # noqa: SIM115


def run(app: typer.Typer, prog: str) -> NoReturn:
    """Run app on sys.argv as prog and exit with its status; a usage error is one line on stderr
    and typer's status for it (2); output that cannot be written is one line and status 4. With
    stderr closed, every line is dropped and the status stays."""
    stderr_or_null()
    try:
        with outlost.watching():
            code = app(prog_name=prog, standalone_mode=False)
    except typer.TyperException as e:
        # "no arguments" is the help, printed already; typer tells it by its name, as here
        if type(e).__name__ != "NoArgsIsHelpError":
            print(usage_line(prog, e), file=sys.stderr)
        sys.exit(e.exit_code)
    except typer.Abort:
        print(f"{prog}: aborted", file=sys.stderr)
        sys.exit(EXIT_ABORTED)
    except (OSError, SystemExit):
        # SystemExit: click ends a command whose output met a closed pipe with exit 1, no word
        if outlost.lost() is None:
            raise
        outlost.say_lost(prog)
        sys.exit(outlost.EXIT_OUTPUT_LOST)
    # a command that returns (rather than raising typer.Exit) ended well
    sys.exit(code if isinstance(code, int) else 0)
