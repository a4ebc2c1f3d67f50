"""`--version` for every command: the version of the installed package, read from its metadata.

pyproject.toml's version is the one place it is written; memoryd, bxctl, loopd-shim, brokerd-shim
and memory-mcp print it, and scripts/stack compares what runs in each container with what it built.
A stdout that cannot take it is one line and exit 4 (proto.outlost, said by usage.run).
"""

from importlib.metadata import PackageNotFoundError, version
from typing import Annotated

import typer

from proto import outlost

PACKAGE = "boxmaker-memory"


def package_version() -> str:
    """The installed boxmaker-memory's version ("unknown" when it is not installed)."""
    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return "unknown"


def _print_version(ctx: typer.Context, value: bool) -> None:
    if value:
        outlost.echo(f"{ctx.find_root().info_name} {package_version()}")
        raise typer.Exit()


VersionOption = Annotated[
    bool,
    typer.Option(
        "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
]
