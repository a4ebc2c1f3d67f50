"""memoryd serve --config PATH: the memory role's command line."""

import sys
import traceback
from pathlib import Path
from typing import Annotated

import typer
import uvloop

from memoryd import config as config_module
from memoryd.errors import StartFailed
from memoryd.server import prepare, run
from proto import logline, usage
from proto.escape import escape
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
        service = _prepared(cfg)
        uvloop.run(run(cfg, service))
    except StartFailed as e:
        # one_line: a path it names may hold a newline (any folder name is legal).
        why = logline.one_line(str(e))
        print(f"memoryd: cannot start: {why} (runbook: memoryd-start-failed)", file=sys.stderr)
        raise typer.Exit(logline.EXIT_START_FAILED) from None


def _prepared(cfg: config_module.Config):
    """prepare(cfg), where anything but StartFailed is a bug met at start (a file memoryd reads
    holding what it did not foresee): said in the start failure's one line, naming the error
    and where it was raised, rather than a traceback of a hundred lines that names neither the
    file nor the runbook."""
    try:
        return prepare(cfg)
    except StartFailed:
        raise
    except Exception as e:  # noqa: BLE001 - a start that cannot succeed says so in one line
        frames = traceback.extract_tb(e.__traceback__)
        where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
        text = " ".join(str(e).split())
        text = text if len(text) <= 200 else text[:199] + "…"
        raise StartFailed(
            f"an unexpected error{where}: {type(e).__name__}: {escape(text, markup=False)}"
        ) from None


def main() -> None:
    usage.run(app, "memoryd")
