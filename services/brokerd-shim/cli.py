"""The brokerd-shim command: brokerd-shim serve [--config PATH].

Errors at start are one line on stderr naming the cause, and exit status 2 (EXIT_START_FAILED, as
every role); everything after is logged, one line per event, to stderr.
"""

import sys
from pathlib import Path
from typing import Annotated

import typer
import uvloop

from brokerd_shim.config import load_config
from brokerd_shim.errors import BrokerError
from brokerd_shim.server import serve
from proto import logline, usage
from proto.narrowterm import escape_what_cannot_be_shown
from proto.version import VersionOption

app = typer.Typer(
    add_completion=False, help="Stands in for brokerd (spec 8) for boxmaker's memory."
)


@app.callback()
def _root(version: VersionOption = False) -> None:
    """brokerd-shim: grants, taint, the composite runtime and labels."""


@app.command("serve")
def serve_command(
    config: Annotated[
        Path | None, typer.Option("--config", help="brokerd.toml (optional)", readable=False)
    ] = None,
) -> None:
    """Serve tool_request on the broker socket until SIGTERM or SIGINT."""
    logline.configure_role(rotate=True)
    try:
        settings = load_config(config)
        uvloop.run(serve(settings))
    except BrokerError as e:
        print(f"brokerd-shim: {e}", file=sys.stderr)
        raise typer.Exit(logline.EXIT_START_FAILED) from None
    except KeyboardInterrupt:
        pass


def main() -> None:
    escape_what_cannot_be_shown()  # its log lines quote memory text, in any language
    usage.run(app, "brokerd-shim")
