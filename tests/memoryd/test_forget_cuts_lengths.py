"""A forgotten long text lists its exact length beside its rung digests (forgetcuts.py), so a row
that is a near copy of it (a page fetched again, a different line at its end) is checked in a few
dozen small hashes: it hashed every character from the longest listed rung to twice it, a copy of
the running hash each (2,000 re-fetches of a 60 KB page forgotten once took 25 s of catch-up
instead of 3 s). A row that begins with the whole text still goes; a forget line written before
lengths were listed keeps out what it did."""

import hashlib

import pytest

from memoryd.journal import forgetcuts, forgotten

PAGE = " ".join(f"word{n * 7919 % 3001}" for n in range(9000))[:60000]


def listed(*texts: str) -> frozenset[str]:
    return frozenset(d for t in texts for d in (forgotten.digest(t), *forgetcuts.cuts(t)))


class Counted:
    """hashlib as forgetcuts sees it, counting the hashes made (copies included)."""

    def __init__(self) -> None:
        self.made = 0

    def sha256(self, data: bytes = b""):
        return _Hash(self, hashlib.sha256(data))


class _Hash:
    def __init__(self, counter: Counted, inner) -> None:
        self.counter, self.inner = counter, inner
        counter.made += 1

    def update(self, data: bytes) -> None:
        self.inner.update(data)

    def copy(self):
        return _Hash(self.counter, self.inner.copy())

    def hexdigest(self) -> str:
        return self.inner.hexdigest()


@pytest.fixture
def counted(monkeypatch):
    counter = Counted()
    monkeypatch.setattr(forgetcuts, "hashlib", counter)
    return counter


def test_a_near_copy_of_a_forgotten_page_costs_few_hashes(counted):
    digests = listed(PAGE + " fetched at start")
    counted.made = 0
    assert not forgetcuts.listed(PAGE + " fetched at 7", digests, cut=False)
    assert counted.made < 100, counted.made  # some 28,000 when every prefix was hashed


def test_a_row_that_begins_with_the_whole_text_still_goes():
    digests = listed(PAGE)
    assert forgetcuts.listed(PAGE + " and what came after", digests, cut=False)
    assert forgetcuts.listed(PAGE, digests, cut=False)
    assert not forgetcuts.listed(PAGE[:-3] + "xyz and more", digests, cut=False)


def test_texts_sharing_their_longest_rung_each_keep_their_length():
    one, two = PAGE[:40000], PAGE[:52000]
    digests = listed(one, two)
    assert forgetcuts.listed(one + " tail", digests, cut=False)
    assert forgetcuts.listed(two + " tail", digests, cut=False)
    assert not forgetcuts.listed(PAGE[:39000] + "#tail", digests, cut=False)


def test_a_forget_line_without_lengths_keeps_out_what_it_did():
    text = PAGE + " fetched at start"
    rungs = forgetcuts.cuts(text)[: len(forgetcuts._rungs(len(text.encode())))]
    older = frozenset([forgotten.digest(text), *rungs])
    assert forgetcuts.listed(text + " and after", older, cut=False)
    assert not forgetcuts.listed(PAGE + " fetched at 7", older, cut=False)
