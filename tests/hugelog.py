"""A session log holding one huge tool result, written to disk a megabyte at a time, for the tests
and the benchmark of memoryd's witness (its label comes after the output, as a peer may write it).

kind "plain" is an output of one letter repeated; "json" is a fetched JSON document, an escaped
quote every few bytes (the costlier kind to scan for the string's end).
"""

import json
from pathlib import Path

MIB = 1 << 20
_UNITS = {
    "plain": b"x" * 64,
    "json": b'{\\"id\\": 7, \\"name\\": \\"kestrel\\", \\"tags\\": [\\"a\\", \\"b\\"]}, ',
}


def write_huge_log(path: Path, mib: int, kind: str = "json", *, untrusted: bool = True) -> int:
    """Write a log of a short user record and one tool result whose output is mib MiB, its class
    and untrusted label after the output; the log's size in bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    unit = _UNITS[kind]
    block = (unit * (MIB // len(unit) + 1))[:MIB]
    while block.endswith(b"\\"):  # never end a block inside an escape
        block = block[:-1]
    head = {"type": "tool_result", "time": "2026-09-20T14:02:11Z", "call_id": "c", "name": "fetch"}
    with open(path, "wb") as f:
        f.write(b'{"type":"user","time":"2026-09-20T14:02:11Z","content":"fetch it"}\n')
        f.write(json.dumps(head)[:-1].encode() + b', "output": "')
        for _ in range(mib):
            f.write(block)
        label = {"class": "private", "untrusted": untrusted}
        f.write(b'", ' + json.dumps(label)[1:].encode() + b"\n")
    return path.stat().st_size
