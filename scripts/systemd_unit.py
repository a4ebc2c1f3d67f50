"""Finish a unit that `podman generate systemd --new` wrote, for scripts/stack install; or write
the daily memory backup's service and timer.

    python scripts/systemd_unit.py UNIT_FILE [--env NAME=VALUE]... [--after UNIT]
    python scripts/systemd_unit.py --backup-dir DIR --container NAME --podman PATH --keep N
        [--env NAME=VALUE]... [--after UNIT]
    python scripts/systemd_unit.py --check-keep N      bxctl's words when it refuses --keep N

Prints the unit with each --env as an Environment= line of [Service] (podman on machines like
our CI needs CONTAINERS_CONF, and a unit starts with systemd's environment, not the owner's), and
with Wants= and After= on the role it needs (brokerd-shim after memoryd, loopd-shim after
brokerd-shim), so that the stack comes back in order after a reboot. Pure text in, text out.

The backup runs `bxctl memory backup --keep N` inside memoryd's container once a day (Persistent:
a day missed while the machine was off runs at the next start): memoryd writes the archive to
{home}/backups/ and removes all but the newest N it made.
"""

import argparse
import sys
from pathlib import Path


def finish_unit(text: str, env: list[str], after: str | None) -> str:
    """The unit text with the environment and order added (each line once)."""
    out: list[str] = []
    section = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            section = stripped
            out.append(line)
            if section == "[Unit]" and after:
                out += [f"Wants={after}", f"After={after}"]
            if section == "[Service]":
                out += [f'Environment="{item}"' for item in env]
            continue
        out.append(line)
    if "[Service]" not in text:
        raise ValueError("not a service unit: no [Service] section")
    return "\n".join(out) + "\n"


BACKUP_UNIT = "boxmaker-memory-backup"


def backup_service(
    container: str, podman: str, keep: int, env: list[str], after: str | None
) -> str:
    """The oneshot service the timer starts."""
    lines = ["[Unit]", f"Description=boxmaker: back up memory (keep the newest {keep})"]
    if after:
        lines += [f"Wants={after}", f"After={after}"]
    lines += ["", "[Service]", "Type=oneshot"]
    lines += [f'Environment="{item}"' for item in env]
    lines.append(f"ExecStart={podman} exec {container} bxctl memory backup --keep {keep}")
    return "\n".join(lines) + "\n"


def backup_timer() -> str:
    return (
        "[Unit]\nDescription=boxmaker: back up memory daily\n\n"
        "[Timer]\nOnCalendar=daily\nPersistent=true\nRandomizedDelaySec=15min\n\n"
        "[Install]\nWantedBy=timers.target\n"
    )


def keep_refused(keep: str) -> str | None:
    """Why `bxctl memory backup --keep KEEP` would be refused, in bxctl's own words, or None: the
    daily backup runs that command, and one bxctl refuses would fail every day with no one to see
    it. Asked of bxctl's own option (its range), not of a copy of its bounds here."""
    import typer.main

    from bxctl.cli import app

    command = typer.main.get_command(app).commands["memory"].commands["backup"]  # type: ignore
    try:
        command.make_context("bxctl memory backup", ["--keep", keep])
    except Exception as e:  # noqa: BLE001 - click's usage error (typer's click or click's own)
        said = getattr(e, "format_message", None)
        return said() if callable(said) else str(e)
    return None


def _backup_units(args) -> int:
    if not args.container or not args.podman or args.keep is None:
        print(
            "systemd_unit.py: --backup-dir needs --container, --podman and --keep N",
            file=sys.stderr,
        )
        return 2
    refused = keep_refused(str(args.keep))
    if refused:
        print(f"systemd_unit.py: --keep {args.keep}: {refused}", file=sys.stderr)
        return 2
    service = backup_service(args.container, args.podman, args.keep, args.env, args.after)
    (args.backup_dir / f"{BACKUP_UNIT}.service").write_text(service, encoding="utf-8")
    (args.backup_dir / f"{BACKUP_UNIT}.timer").write_text(backup_timer(), encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("unit", type=Path, nargs="?")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--after", default=None, metavar="UNIT")
    parser.add_argument("--backup-dir", type=Path, default=None, metavar="DIR")
    parser.add_argument("--container", default=None)
    parser.add_argument("--podman", default=None)
    parser.add_argument("--keep", type=int, default=None)
    parser.add_argument("--check-keep", default=None, metavar="N")
    args = parser.parse_args(argv)
    if args.check_keep is not None:
        refused = keep_refused(args.check_keep)
        if refused:
            print(refused, file=sys.stderr)
        return 1 if refused else 0
    for item in args.env:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier() or '"' in value or "\n" in value:
            parser.error(f"--env {item!r}: NAME=VALUE without quotes or newlines")
    if args.backup_dir is not None:
        return _backup_units(args)
    if args.unit is None:
        parser.error("a UNIT_FILE, or --backup-dir")
    try:
        text = args.unit.read_text(encoding="utf-8")
        sys.stdout.write(finish_unit(text, args.env, args.after))
    except (OSError, ValueError) as e:
        print(f"systemd_unit.py: {args.unit}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
