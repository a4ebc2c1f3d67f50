"""Finish a unit that `podman generate systemd --new` wrote, for scripts/stack install.

    python scripts/systemd_unit.py UNIT_FILE [--env NAME=VALUE]... [--after UNIT]

Prints the unit with each --env as an Environment= line of [Service] (podman on machines like
our CI needs CONTAINERS_CONF, and a unit starts with systemd's environment, not the owner's), and
with Wants= and After= on the role it needs (brokerd-shim after memoryd, loopd-shim after
brokerd-shim), so that the stack comes back in order after a reboot. Pure text in, text out.
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("unit", type=Path)
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--after", default=None, metavar="UNIT")
    args = parser.parse_args(argv)
    for item in args.env:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier() or '"' in value or "\n" in value:
            parser.error(f"--env {item!r}: NAME=VALUE without quotes or newlines")
    try:
        text = args.unit.read_text(encoding="utf-8")
        sys.stdout.write(finish_unit(text, args.env, args.after))
    except (OSError, ValueError) as e:
        print(f"systemd_unit.py: {args.unit}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
