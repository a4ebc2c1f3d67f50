"""The memory files a restore laid, less the restore's own journal line (data/lay.py: restored),
for the tests that check the rest is the archive's byte for byte."""

import json


def _restore_line(line: bytes) -> bool:
    try:
        return json.loads(line).get("action") == "restore"
    except ValueError:
        return False


def without_restore_lines(files: dict[str, bytes]) -> dict[str, bytes]:
    """files (name in the archive: bytes) with every journal line of action restore taken out,
    and a month file that held only such lines left out."""
    out = {}
    for name, data in files.items():
        if name.startswith("memory/edits/"):
            data = b"".join(x for x in data.splitlines(keepends=True) if not _restore_line(x))
            if not data:
                continue
        out[name] = data
    return out
