"""stats' hit counts: the fast paths agree with parsing every line as JSON."""

import json
import random
from collections import Counter

import pytest

from memoryd.owner import stats


def recall_lines(seed: int, n: int = 1_500) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        hits = [
            {
                "kind": rng.choice(["moved", "noted", "dropped", "session"]),
                "session": "s-1",
                "record": rng.randrange(40),
                "tag": "memory",
            }
            for _ in range(rng.randrange(6))
        ]
        line = {
            "time": f"2026-11-{1 + i * 29 // n:02d}T10:00:00Z",
            "session": "s-1",
            # A query cannot forge the owner's mark or a hit: JSON escapes its quotes.
            "query": rng.choice(['x","by":"owner"}', '"kind":"moved","record":7', "tea"]),
            "k": 5,
            "hits": hits,
        }
        if rng.random() < 0.1:
            line["by"] = "owner"
        # Written after the owner's mark: a partial recall, a recall mode other than spec.
        if rng.random() < 0.2:
            line["partial"] = True
        if rng.random() < 0.2:
            line["mode"] = "context"
        out.append(line)
    return out


def reference(lines: list[dict], cutoff: str) -> tuple[Counter, int]:
    counts: Counter = Counter()
    recalls = 0
    for line in lines:
        if line.get("by") == "owner" or line["time"][:19] < cutoff:
            continue
        recalls += 1
        for hit in line["hits"]:
            if hit["kind"] != "session":
                counts[hit["record"]] += 1
    return counts, recalls


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("cutoff", ["2026-10-01T00:00:00", "2026-11-15T00:00:00"])
def test_counts_match_parsing_every_line(seed, cutoff):
    lines = recall_lines(seed)
    data = "".join(
        json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines
    ).encode()
    expected_counts, expected_recalls = reference(lines, cutoff)
    for variant in (data, b"\n" + data, data.replace(b',"k":5', b', "k": 5', 3)):
        counts, recalls = stats.count_month(variant, cutoff.encode())
        assert recalls == expected_recalls
        assert +counts == +expected_counts
