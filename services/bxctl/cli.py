"""bxctl: reindex, and memory log, undo, pending, accept, reject (spec 10), and the owner's view:
memory show, block, search, stats, promote, edit.

One typer app per command group, joined with add_typer: memory_log.py (the journal and review) and
owner_view.py (the owner's view) both fill `bxctl memory`. Every command talks to memoryd's owner
socket (--memory-socket, default {home}/run/owner-memory/admin.sock), takes --json, and prints
through common.py, which escapes whatever memoryd answers. Shell completion is typer's
(--install-completion, --show-completion); help shows each option's default.

main() is the command's entry: every failure it can name is one line on stderr and a non-zero exit,
a usage error included (the line, then where the help is), and output that cannot be written (a
full disk, a closed stdout) is one of those failures, never a traceback nor a silent success.
Started with stderr closed, bxctl does nothing and exits 1 without a word: an error line must
never land in stdout (in the file an export is written to). Ctrl-C (exit 130) says whether
memoryd was sent a change it may still apply; SIGTERM and SIGHUP end bxctl the same way (exit
128 + the signal), its clean-up run.
"""

import contextlib
import errno
import os
import signal
import sys
import threading
import time
from typing import NoReturn

import typer
from pydantic import ValidationError

from bxctl import memory_log, owner_data, owner_view
from bxctl.common import (  # noqa: F401  (ask, fail and show are used by tests and callers)
    EXIT_REFUSED,
    EXIT_UNREACHABLE,
    Json,
    MemorySocket,
    ask,
    default_socket,
    fail,
    safe_json,
    show,
)
from bxctl.reach import interrupted_line, output_lost_line
from bxctl.sessionindex import index_state_at, reindex_said
from proto import usage
from proto.escape import escape
from proto.messages import Reindex, Reindexed
from proto.narrowterm import escape_what_cannot_be_shown
from proto.outlost import EXIT_OUTPUT_LOST, OUTPUT_ERRORS
from proto.version import VersionOption

REINDEX_TIMEOUT = 3600.0
EXIT_INTERRUPTED = 130  # typer's, as a shell's for SIGINT
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)  # ended as Ctrl-C, exit 128 + the signal
STOPPED: dict[str, int | None] = {"signal": None}

app = typer.Typer(no_args_is_help=True, help="boxmaker's owner commands.")
memory_app = typer.Typer(
    no_args_is_help=True, help="See, search and correct memory; undo writes; review them."
)
memory_app.add_typer(memory_log.app)
memory_app.add_typer(owner_view.app)
memory_app.add_typer(owner_data.app)
app.add_typer(memory_app, name="memory")


@app.callback()
def _root(version: VersionOption = False) -> None:
    """boxmaker's owner commands."""


def _progress(done: threading.Event) -> None:
    """Show elapsed time on a terminal while a reindex runs."""
    start = time.monotonic()
    frames = "|/-\\"
    i = 0
    while not done.wait(0.25):
        sys.stderr.write(f"\rreindexing {frames[i % 4]} {time.monotonic() - start:5.1f}s")
        sys.stderr.flush()
        i += 1
    sys.stderr.write("\r" + " " * 30 + "\r")
    sys.stderr.flush()


@app.command()
def reindex(as_json: Json = False, memory_socket: MemorySocket = None) -> None:
    """Rebuild the memory index from sessions/ and notes.md."""
    done = threading.Event()
    spinner = None
    if sys.stderr.isatty():
        spinner = threading.Thread(target=_progress, args=(done,), daemon=True)
        spinner.start()
    try:
        reply = ask(memory_socket, Reindex(), Reindexed, timeout=REINDEX_TIMEOUT)
    finally:
        done.set()
        if spinner is not None:
            spinner.join()
    # The spec's answer counts what the new index holds; what it left out is stats' to say
    # (the reply stays the spec's body), asked once the reindex is done.
    state = index_state_at(memory_socket or default_socket())
    print(reindex_said(reply, state, as_json))


def _output_lost(why: str) -> NoReturn:
    """One line on stderr that the output was lost and whether memoryd applied a change first,
    then EXIT_OUTPUT_LOST."""
    _quiet_stdout()
    with contextlib.suppress(OSError):
        print(f"bxctl: {output_lost_line(why)}", file=sys.__stderr__)
    sys.exit(EXIT_OUTPUT_LOST)


def _quiet_stdout() -> None:
    """Point fd 1 at /dev/null so the output still buffered cannot fail again at exit."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)


def main() -> None:
    if sys.stderr is None:  # started with fd 2 closed: no line could be said, and never on fd 1
        sys.exit(EXIT_REFUSED)
    if sys.stdout is None:  # started with fd 1 closed: the answer would be lost
        print("bxctl: the standard output is closed; nothing was done", file=sys.stderr)
        sys.exit(EXIT_REFUSED)
    escape_what_cannot_be_shown()
    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:  # nohup's stays ignored
            signal.signal(sig, _stopped)
    try:
        try:
            code = app(standalone_mode=False)
        except KeyboardInterrupt:  # one that lands outside the command, as typer answers it
            code = EXIT_INTERRUPTED
        finally:
            sys.stdout.flush()
    except typer.TyperException as e:
        # typer's own handler draws a box of several lines; its "no arguments" error is the
        # help, already printed (typer tells it by its name, too).
        if type(e).__name__ != "NoArgsIsHelpError":
            print(usage.usage_line("bxctl", e), file=sys.stderr)
        sys.exit(e.exit_code)
    except typer.Abort:
        print("bxctl: aborted; nothing more was done", file=sys.stderr)
        sys.exit(EXIT_REFUSED)
    except ValidationError as e:
        # a message that does not fit the protocol, made of something no command checked
        # first: one line, not pydantic's pages
        print(f"bxctl: {_invalid(e)}", file=sys.stderr)
        sys.exit(EXIT_REFUSED)
    except OSError as e:
        if e.errno not in OUTPUT_ERRORS:
            raise
        _output_lost(e.strerror or str(e))
    except SystemExit:
        # typer ends a command whose output met a closed pipe (EPIPE) with exit 1 and no word,
        # its streams wrapped to stay quiet: that is said here like any other lost output
        if type(sys.stdout).__name__ != "PacifyFlushWrapper":
            raise
        _output_lost(os.strerror(errno.EPIPE) + " (the reader of the output is gone)")
    if code == EXIT_INTERRUPTED:  # typer's answer to Ctrl-C, which it says nothing of
        signum = STOPPED["signal"]
        # after SIGHUP the terminal may be gone: the exit code still says what happened
        with contextlib.suppress(OSError):
            print(f"bxctl: {interrupted_line(signum)}", file=sys.stderr)
        code = EXIT_INTERRUPTED if signum is None else 128 + signum
    sys.exit(code if isinstance(code, int) else 0)


def _invalid(e: ValidationError) -> str:
    """pydantic's error as one line: the model, the first field refused and why."""
    errors = e.errors(include_url=False, include_input=False)
    field, why = "?", "invalid"
    if errors:
        field = ".".join(str(part) for part in errors[0]["loc"]) or field
        why = " ".join(errors[0]["msg"].split()) or why
    return escape(
        f"could not make a {e.title} message ({field}: {why}); it was not sent", markup=False
    )


def _stopped(signum: int, frame: object) -> None:
    """SIGTERM or SIGHUP (a service manager's stop, a closed terminal) ends bxctl as Ctrl-C does,
    so that what it made runs its clean-up (a copy handed to memoryd, a temporary file beside
    --out) and the same one line is said; a second one is ignored so as not to cut that short."""
    STOPPED["signal"] = signum
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    raise KeyboardInterrupt
