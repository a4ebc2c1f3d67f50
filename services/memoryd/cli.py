"""memoryd serve --config PATH: the memory role's command line."""

import sys
from pathlib import Path
from typing import Annotated

import typer
import uvloop

from memoryd import config as config_module
from memoryd.errors import StartFailed
from memoryd.server import prepare, run
from proto import logline, usage
from proto.version import VersionOption

app = typer.Typer(add_completion=False, help="memoryd: boxmaker's memory role.")


@app.callback()
def main_callback(version: VersionOption = False) -> None:
    """memoryd: boxmaker's memory role."""


@app.command()
def serve(
    config: Annotated[
        Path | None,
        # readable=False: the loader says in the role's one line why a file cannot be read,
        # where click's own check printed a usage box.
        typer.Option(
            "--config", envvar="MEMORYD_CONFIG", help="memoryd.toml (spec 11)", readable=False
        ),
    ] = None,
) -> None:
    """Serve the memory block, recall and memory calls, and the owner's commands."""
    logline.configure_role(rotate=True)
    try:
        cfg = config_module.load(config)
        service = prepare(cfg)
        uvloop.run(run(cfg, service))
    except StartFailed as e:
        print(f"memoryd: cannot start: {e} (runbook: memoryd-start-failed)", file=sys.stderr)
        raise typer.Exit(logline.EXIT_START_FAILED) from None


def main() -> None:
    usage.run(app, "memoryd")
