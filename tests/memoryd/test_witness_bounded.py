"""The witness keeps the read state of the sessions called last only (trust/seen.py): memoryd does
not grow with every session that ever called, and a session dropped from it keeps its label, so
no log deleted, replaced or shrunk after the drop makes a tainted session clean."""

import os
import threading
import tracemalloc

import pytest

from memoryd.home import Home
from memoryd.trust.witness import Witness

from .test_service import write_log
from .test_witness import result, user

MOST = 8
SESSION = "mm-witness01"


@pytest.fixture
def home(tmp_path):
    return Home(tmp_path / "home")


def _others(witness: Witness, n: int, prefix: str = "mm-other") -> None:
    """Calls of n other sessions with no log (made-up ids), enough to drop the first."""
    for i in range(n):
        assert witness.stricter(f"{prefix}{i:05d}", "private", False) == ("private", False)


def test_sessions_with_made_up_ids_are_not_all_kept(home):
    witness = Witness(home, most_seen=MOST)
    _others(witness, 10 * MOST)
    assert witness._seen.sizes() == (MOST, 0)  # nothing to keep of a session with no log


def test_memory_does_not_grow_with_each_session_that_called(home):
    witness = Witness(home, most_seen=MOST)
    _others(witness, 2 * MOST, prefix="mm-warm")
    tracemalloc.start()
    try:
        _others(witness, 3_000)
        grown, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert grown < 100_000, grown  # kept, 3,000 sessions would be over a MiB


def _delete(path) -> None:
    path.unlink()


def _replace_clean(path) -> None:
    path.unlink()
    write_log(path.parent.parent.parent, SESSION, [user()])


def _shrink(path) -> None:
    os.truncate(path, 0)


# name: (the log's records, the label it shows)
LOGS = {
    "untrusted": ([user(), result("private", untrusted=True)], ("private", True)),
    "secret": ([user(), result("secret")], ("secret", False)),
    "secret untrusted": ([result("secret", untrusted=True)], ("secret", True)),
}


@pytest.mark.parametrize("after", [_delete, _replace_clean, _shrink])
@pytest.mark.parametrize("log", LOGS.values(), ids=LOGS.keys())
def test_a_dropped_session_keeps_its_label_whatever_its_log_becomes(home, log, after):
    records, label = log
    witness = Witness(home, most_seen=MOST)
    write_log(home.root, SESSION, records)
    assert witness.stricter(SESSION, "public", False) == label
    _others(witness, 2 * MOST)
    assert witness._seen.sizes() == (MOST, 1)  # dropped, its label left
    after(home.session_log(SESSION))
    assert witness.stricter(SESSION, "public", False) == label
    _others(witness, 2 * MOST, prefix="mm-again")
    assert witness.stricter(SESSION, "public", False) == label  # dropped a second time


def test_a_log_found_unusable_keeps_its_session_untrusted_once_dropped(home, tmp_path):
    folder = home.sessions / SESSION
    folder.mkdir(parents=True)
    os.mkfifo(folder / "0.jsonl")
    witness = Witness(home, most_seen=MOST)
    assert witness.stricter(SESSION, "private", False) == ("private", True)
    _others(witness, 2 * MOST)
    (folder / "0.jsonl").unlink()
    write_log(home.root, SESSION, [user()])
    assert witness.stricter(SESSION, "private", False) == ("private", True)


def test_a_dropped_session_has_its_log_read_whole_again(home):
    witness = Witness(home, most_seen=MOST)
    write_log(home.root, SESSION, [user()])
    assert witness.stricter(SESSION, "private", False) == ("private", False)
    _others(witness, 2 * MOST)
    assert witness._seen.sizes() == (MOST, 0)
    write_log(home.root, SESSION, [result("secret", untrusted=True)])
    assert witness.stricter(SESSION, "private", False) == ("secret", True)


def test_a_session_being_read_is_not_dropped_and_its_label_counts(home, monkeypatch):
    """Sessions flooding in while a session's log is being read do not drop its state from under
    the read: what the read finds is kept, and the log deleted after still changes nothing."""
    write_log(home.root, SESSION, [user(), result("secret", untrusted=True)])
    witness = Witness(home, most_seen=MOST)
    reading, release = threading.Event(), threading.Event()
    real = Witness._read_from

    def held(f, start, seen, path):
        if SESSION in str(path):
            reading.set()
            assert release.wait(10)
        return real(f, start, seen, path)

    monkeypatch.setattr(Witness, "_read_from", staticmethod(held))
    verdicts = []
    thread = threading.Thread(target=lambda: verdicts.append(witness.judge(SESSION)))
    thread.start()
    try:
        assert reading.wait(10)
        _others(witness, 3 * MOST)
        assert SESSION in witness._seen and witness._seen.sizes() == (MOST, 0)  # it stays
    finally:
        release.set()
        thread.join(10)
    assert (verdicts[0].klass, verdicts[0].untrusted) == ("secret", True)
    _others(witness, 2 * MOST, prefix="mm-again")
    assert witness._seen.sizes() == (MOST, 1)
    home.session_log(SESSION).unlink()
    assert witness.stricter(SESSION, "public", False) == ("secret", True)
