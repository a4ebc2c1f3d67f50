"""journalscan finds journal lines without reading the journal whole."""

import json
import random

import pytest

from memoryd.journal import scan as journalscan


def write(path, ids, pad=300):
    with open(path, "w") as f:
        for edit_id in ids:
            f.write(json.dumps({"id": edit_id, "to": "memory.md", "after": ["x" * pad]}) + "\n")


@pytest.mark.parametrize("seed", range(3))
def test_every_id_is_found_in_order_or_not(tmp_path, seed):
    rng = random.Random(seed)
    ids = [f"2026-11-{1 + n // 400:02d}-{n % 400 + 1:04d}" for n in range(4_000)]
    if seed == 2:  # the clock went back: ids out of order; the search from the end finds them
        rng.shuffle(ids)
    path = tmp_path / "2026-11.jsonl"
    write(path, ids, pad=rng.randrange(10, 600))
    for edit_id in rng.sample(ids, 200) + [ids[0], ids[-1]]:
        assert journalscan.line_with_id(path, edit_id).id == edit_id
    assert journalscan.line_with_id(path, "2026-11-30-9999") is None
    assert journalscan.line_with_id(path, "2026-11-01-0000") is None


def test_tail_and_from_id_across_months(tmp_path):
    write(tmp_path / "2026-10.jsonl", [f"2026-10-01-{n:04d}" for n in range(1, 6)])
    with open(tmp_path / "2026-10.jsonl", "a") as f:
        f.write("not json\n")
    write(tmp_path / "2026-11.jsonl", [f"2026-11-01-{n:04d}" for n in range(1, 4)])
    months = [tmp_path / "2026-10.jsonl", tmp_path / "2026-11.jsonl"]
    assert [r.id for r in journalscan.tail(months, 4)] == [
        "2026-10-01-0005",
        "2026-11-01-0001",
        "2026-11-01-0002",
        "2026-11-01-0003",
    ]
    window = journalscan.from_id(months, "2026-10-01-0004", 3)
    assert [r.id for r in window] == ["2026-10-01-0004", "2026-10-01-0005", "2026-11-01-0001"]
    assert journalscan.from_id(months, "2026-09-01-0001", 3) is None
    last = journalscan.last_with_to(months, "memory.md")
    assert last.id == "2026-11-01-0003" and journalscan.last_with_to(months, "user.md") is None
