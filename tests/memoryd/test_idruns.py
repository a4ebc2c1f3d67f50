"""Runs, the numbers a journal month holds for a day kept as runs: adding, membership, and
whether a range (low, high] holds any, against the plain set they stand for."""

import random

import pytest

from memoryd.journal.idruns import Ids, Runs


def _runs(numbers) -> Runs:
    runs = Runs()
    for n in numbers:
        runs.add(n)
    return runs


@pytest.mark.parametrize(
    ("numbers", "low", "high", "expected"),
    [
        ([], 0, 10, False),
        ([5], 4, 5, True),
        ([5], 5, 9, False),  # low itself is outside the range
        ([5], 0, 4, False),
        ([1, 2, 3, 8, 9], 3, 7, False),  # the gap between two runs
        ([1, 2, 3, 8, 9], 3, 8, True),
        ([1, 2, 3, 8, 9], 0, 1, True),
        ([1, 2, 3, 8, 9], 9, 100, False),
        ([1, 2, 3, 8, 9], 2, 2, False),  # an empty range
    ],
)
def test_any_in(numbers, low, high, expected):
    assert _runs(numbers).any_in(low, high) is expected


def test_any_in_agrees_with_the_set_it_stands_for():
    rng = random.Random(7)
    for _ in range(300):
        numbers = set(rng.sample(range(1, 60), rng.randint(0, 25)))
        runs = _runs(rng.sample(sorted(numbers), len(numbers)))
        low = rng.randint(0, 60)
        high = rng.randint(low, 61)
        assert runs.any_in(low, high) is any(low < n <= high for n in numbers)
        assert all((n in runs) is (n in numbers) for n in range(62))


def test_ids_any_in_reads_the_day_as_memoryd_writes_it():
    ids = Ids()
    ids.take("2026-09-24", "0003")
    ids.take("2026-09-24", "00009")  # a hand-written width: another id than 0009
    assert ids.any_in("2026-09-24", 2, 3)
    assert not ids.any_in("2026-09-24", 3, 10)
    assert not ids.any_in("2026-09-25", 0, 10)
