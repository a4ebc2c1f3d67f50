"""The brokerd-shim command: brokerd-shim serve [--config PATH].

Errors at start are one line on stderr naming the cause, and exit status 1; everything after is
logged, one line per event, to stderr.
"""

import sys
from pathlib import Path

import typer
import uvloop

from brokerd_shim.config import load_config
from brokerd_shim.errors import BrokerError
from brokerd_shim.server import serve
from proto import logline

app = typer.Typer(
    add_completion=False, help="Stands in for brokerd (spec 8) for boxmaker's memory."
)


@app.callback()
def _root() -> None:
    """brokerd-shim: grants, taint, the composite runtime and labels."""


@app.command("serve")
def serve_command(
    config: Path | None = typer.Option(None, "--config", help="brokerd.toml (optional)"),
) -> None:
    """Serve tool_request on the broker socket until SIGTERM or SIGINT."""
    logline.configure("%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        settings = load_config(config)
        uvloop.run(serve(settings))
    except BrokerError as e:
        print(f"brokerd-shim: {e}", file=sys.stderr)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        pass


def main() -> None:
    app()
