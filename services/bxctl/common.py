"""What every bxctl command shares: the owner socket, asking memoryd, printing safely.

Whatever memoryd answers is printed through proto's escape(), so an entry cannot render as markup,
move the cursor or mention anyone. --json prints one JSON document with every non-ASCII and
control character as a \\u escape, so it is as safe on a terminal. Colour only on a terminal (and
not with NO_COLOR). Errors are one message on stderr and an exit status: 1 refused (nothing was
changed), 2 a usage error (nothing was sent), 3 memoryd not answering (the line says when a change
it was sent may stand), 4 the output could not be written (the line says whether a change was done
first), 130 or 128 + the signal interrupted (cli.py). An answer whose JSON is not the shape a
command reads is "bad answer from memoryd", as a reply of the wrong kind is: the socket may be
anyone's.
"""

import contextlib
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from bxctl import reach
from proto.client import SOCKET_PATH_MAX, RemoteError, Reply
from proto.config import default_home, host_paths
from proto.errors import FrameTimeout, PeerClosed, ProtoError, Unreachable
from proto.escape import escape
from proto.messages import ADMIN_ARG_MAX, Body, MemoryAdmin, MemoryAdminReply
from proto.paths import OWNER_ADMIN_SOCKET, under

EXIT_REFUSED = 1
EXIT_UNREACHABLE = 3
ADMIN_TIMEOUT = reach.ADMIN_TIMEOUT


def default_socket() -> Path:
    return under(default_home(), OWNER_ADMIN_SOCKET)


MemorySocket = Annotated[
    Path | None,
    typer.Option(
        "--memory-socket",
        envvar="BOXMAKER_MEMORY_SOCKET",
        help="memoryd's owner socket.",
        show_default=f"$BOXMAKER_HOME/{OWNER_ADMIN_SOCKET}",
    ),
]
Json = Annotated[
    bool, typer.Option("--json", help="Print one JSON document (the same fields as the text).")
]


def fail(text: str, code: int) -> NoReturn:
    """The error as one line on stderr (a line break in a path or an answer shown as an
    escape: a second line would read as another message), then the exit status."""
    one_line = text.replace("\r", "\\x0d").replace("\n", "\\x0a")
    print(f"bxctl: {one_line}", file=sys.stderr)
    raise typer.Exit(code)


def socket_home(memory_socket: Path) -> Path | None:
    """The home the socket lies in at its usual place ({home}/run/owner-memory/admin.sock), or
    None when it lies elsewhere."""
    parts = Path(os.path.abspath(memory_socket)).parts
    tail = OWNER_ADMIN_SOCKET.parts
    if len(parts) > len(tail) and parts[-len(tail) :] == tail:
        return Path(*parts[: -len(tail)])
    return None


def refuse_other_home(memory_socket: Path | None) -> None:
    """Exit, before memoryd is asked, when the socket given lies at its usual place in another
    home than $BOXMAKER_HOME: a variable left from another stack would act on that home while
    the owner reads this one's files (and a data command would read and write both)."""
    if memory_socket is None or not os.environ.get("BOXMAKER_HOME"):
        return
    home = default_home()
    with contextlib.suppress(OSError):
        if os.path.samefile(memory_socket, under(home, OWNER_ADMIN_SOCKET)):
            return  # this home's own socket, by whatever path (a link on the way)
    # Where it lies as named, and where it really is (a link named otherwise to another home's)
    named = (memory_socket, Path(os.path.realpath(memory_socket)))
    others = [t for t in map(socket_home, named) if t is not None]
    theirs = next((t for t in others if os.path.realpath(t) != os.path.realpath(home)), None)
    if theirs is not None:
        fail(
            f"--memory-socket {escape(str(memory_socket), markup=False)} is the memoryd of the "
            f"home {escape(str(theirs), markup=False)}, but BOXMAKER_HOME is "
            f"{escape(str(home), markup=False)}: set BOXMAKER_HOME to that home or leave out "
            "--memory-socket; nothing was done",
            EXIT_REFUSED,
        )


def home_is_not_a_folder() -> None:
    """Exit with one line naming BOXMAKER_HOME when it names something other than a folder, or
    when it is unset and its default is no folder (a new terminal before the line scripts/stack
    up printed was pasted): the default socket under it cannot exist, and "memoryd is not
    answering" would send the owner to a memoryd that runs well in the home they meant."""
    home = default_home()
    if home.is_dir():
        return
    what = "does not exist" if not home.exists() else "is not a folder"
    shown = escape(str(home), markup=False)
    if os.environ.get("BOXMAKER_HOME"):
        fail(
            f"BOXMAKER_HOME={shown} {what}: set it to the stack's home "
            "(scripts/stack status names it) or pass --memory-socket",
            EXIT_UNREACHABLE,
        )
    fail(
        f"BOXMAKER_HOME is not set and its default {shown} {what}: export the line scripts/stack "
        "up printed (scripts/stack status names the home) or pass --memory-socket",
        EXIT_UNREACHABLE,
    )


def ask_or_raise(
    socket: Path | None, message: Body, reply: type[Reply], timeout: float = ADMIN_TIMEOUT
) -> Reply:
    """memoryd's answer (a reply); RemoteError when it refuses; exits when it is not answering."""
    refuse_other_home(socket)
    path = socket or default_socket()
    size = len(os.fsencode(path))
    if size > SOCKET_PATH_MAX:
        fail(
            f"the socket path {escape(str(path), markup=False)} is {size} bytes, longer than a "
            f"Unix socket path may be ({SOCKET_PATH_MAX}): name it by a shorter path (a symbolic "
            "link in a short folder)",
            EXIT_UNREACHABLE,
        )
    try:
        reach.note_sent(message)
        answer = reach.exchange(path, message, reply, timeout)
        reach.note_answered(message)
        return answer
    except RemoteError:
        raise
    except Unreachable:
        if socket is None:
            home_is_not_a_folder()
        why = reach.unreachable_why(path)
        if why is not None:
            fail(why, EXIT_UNREACHABLE)
        fail(
            f"memoryd is not answering on {escape(str(path), markup=False)} "
            "(runbook: memoryd-unreachable)",
            EXIT_UNREACHABLE,
        )
    except PeerClosed:
        # Connected and sent: memoryd may have acted on the request before it went away.
        fail(
            f"memoryd closed the connection on {escape(str(path), markup=False)} before it "
            f"answered{reach.unanswered(message)} (runbook: memoryd-unreachable)",
            EXIT_UNREACHABLE,
        )
    except reach.StoppedAnswering:
        fail(
            f"memoryd stopped answering on {escape(str(path), markup=False)}: it answered "
            f"nothing, not even a health probe, in {reach.SILENT_LIMIT:g} seconds"
            f"{reach.unanswered(message)} (runbook: memoryd-unreachable)",
            EXIT_UNREACHABLE,
        )
    except FrameTimeout:
        fail(
            f"memoryd did not answer on {escape(str(path), markup=False)} in {timeout:g} seconds"
            f"{reach.unanswered(message)} (runbook: memoryd-unreachable)",
            EXIT_UNREACHABLE,
        )
    except ProtoError as e:
        fail(
            f"bad answer from memoryd on {escape(str(path), markup=False)}: {escape(str(e))}",
            EXIT_REFUSED,
        )


def ask(
    socket: Path | None, message: Body, reply: type[Reply], timeout: float = ADMIN_TIMEOUT
) -> Reply:
    try:
        return ask_or_raise(socket, message, reply, timeout)
    except RemoteError as e:
        fail(escape_ids(host_paths(str(e), default_home())), EXIT_REFUSED)


def admin_arg(arg: str | dict) -> str:
    """A dict arg as the JSON text it travels as."""
    if isinstance(arg, dict):
        return json.dumps(arg, ensure_ascii=False, separators=(",", ":"))
    return arg


def arg_too_long(command: str, arg: str) -> str | None:
    """Why arg cannot be sent (longer than one request carries), or None."""
    if len(arg) <= ADMIN_ARG_MAX:
        return None
    return (
        f"memory {command}: the request is {len(arg):,} characters written out, over the "
        f"{ADMIN_ARG_MAX:,} one request may carry; nothing was sent"
    )


def not_utf8(arg: str | dict) -> str | None:
    """Why arg cannot be sent when a value in it is not valid UTF-8 (an argument of bytes the
    terminal or a latin-1 file name gave, which Python keeps as surrogate escapes), or None."""
    named = arg.items() if isinstance(arg, dict) else [("argument", arg)]
    for name, value in named:
        if isinstance(value, str) and (byte := not_utf8_byte(value)) is not None:
            shown = _ARG_NAMES.get(name, name)
            return f"the {shown} is not valid UTF-8{byte}; nothing was sent"
    return None


def not_utf8_byte(value: str) -> str | None:
    """None when value is valid UTF-8; else the words naming its first bad byte (" (byte 0xff)",
    as Python keeps such a byte a terminal or a Latin-1 file name gave), or "" for another."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        code = ord(value[e.start])
        return f" (byte 0x{code - 0xDC00:02x})" if 0xDC80 <= code <= 0xDCFF else ""
    return None


# The words the owner typed a value as, by the field it travels in.
_ARG_NAMES = {"id": "ID", "ref": "REF", "from": "--from ID"}


def admin_message(command: str, arg: str | dict) -> MemoryAdmin:
    """The memory_admin request, or exit with one line when it cannot be sent: a value not valid
    UTF-8, or too long."""
    bad = not_utf8(arg)
    if bad is not None:
        fail(bad, EXIT_REFUSED)
    text = admin_arg(arg)
    too_long = arg_too_long(command, text)
    if too_long is not None:
        fail(too_long, EXIT_REFUSED)
    return MemoryAdmin(command=command, arg=text)


def admin(socket: Path | None, command: str, arg: str | dict) -> str:
    """The text of a memory_admin answer; a dict arg travels as JSON text."""
    return ask(socket, admin_message(command, arg), MemoryAdminReply).text


def load_answer(text: str):
    """memoryd's JSON answer, parsed; exits with "bad answer" when it is not JSON (strict_json),
    or is nested deeper than the parser goes."""
    try:
        return strict_json(text)
    except (ValueError, RecursionError):
        fail("bad answer from memoryd: not JSON", EXIT_REFUSED)


def strict_json(text: str):
    """text parsed as JSON as RFC 8259 has it: NaN, Infinity and a number too large for a float
    (1e999) raise ValueError, as Python's parser takes them. memoryd never sends such numbers,
    and printed they would make --json's output no JSON."""
    return json.loads(text, parse_constant=_not_json, parse_float=_finite)


def _not_json(constant: str) -> NoReturn:
    raise ValueError(f"{constant} is not JSON")


def _finite(text: str) -> float:
    """A JSON number with a fraction or exponent; 1e999 (a float's infinity) is refused."""
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text[:32]} is too large a number")
    return value


def answer_object(text: str, /, **fields: type) -> dict:
    """memoryd's JSON answer as an object holding each named field with its type (a list: of
    strings); exits with "bad answer" naming what is not so."""
    value = load_answer(text)
    if not isinstance(value, dict):
        fail("bad answer from memoryd: not a JSON object", EXIT_REFUSED)
    for name, kind in fields.items():
        if not _fits(value.get(name), kind):
            fail(f"bad answer from memoryd: no {escape(name)} of the right type", EXIT_REFUSED)
    return value


def _fits(field, kind: type) -> bool:
    if kind is bool or isinstance(field, bool):
        return kind is bool and isinstance(field, bool)
    if kind is list:
        return isinstance(field, list) and all(isinstance(item, str) for item in field)
    return isinstance(field, kind)


def safe_json(value) -> str:
    """value as JSON that is safe to print: ASCII only, DEL escaped too."""
    text = json.dumps(value, ensure_ascii=True, indent=2, allow_nan=False)
    return text.replace("\x7f", "\\u007f")


def print_json_text(text: str) -> None:
    """memoryd's JSON answer, parsed and printed safely."""
    value = load_answer(text)
    try:
        printed = safe_json(value)
    except RecursionError:
        fail("bad answer from memoryd: JSON nested too deep to print", EXIT_REFUSED)
    except ValueError:  # a number JSON cannot carry, which strict_json already refuses
        fail("bad answer from memoryd: not JSON", EXIT_REFUSED)
    print(printed)


_INTRAWORD_UNDERSCORE = re.compile(r"(?<=[A-Za-z0-9])_(?=[A-Za-z0-9])")


def escape_ids(text: str) -> str:
    """escape(), but an underscore between two letters or digits stays as it is (inert markup),
    so ids such as my_sess_1 read as they are."""
    return "_".join(escape(part) for part in _INTRAWORD_UNDERSCORE.split(text))


def show(text: str) -> None:
    """Lines of ids, times and file names (log, undo, accept, reject)."""
    print(escape_ids(text))


def show_pending(text: str) -> None:
    """The pending list: indented lines hold a write's entries, escaped in full; heads are ids."""
    print(
        "\n".join(
            escape(line) if line.startswith(" ") else escape_ids(line) for line in text.split("\n")
        )
    )


COLOURS = {"+": "32", "-": "31", "!": "33", "^": "36", "x": "36"}


def use_colour() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def show_diff(text: str) -> None:
    """Escaped, with the lines of a diff coloured by their mark on a terminal."""
    escaped = escape(text)
    if not use_colour():
        print(escaped)
        return
    out = []
    for line in escaped.split("\n"):
        colour = COLOURS.get(line[:1]) if line[1:2] == " " else None
        out.append(f"\x1b[{colour}m{line}\x1b[0m" if colour else line)
    print("\n".join(out))
