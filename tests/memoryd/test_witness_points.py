"""Where the witness read each log to outlives a drop from the sessions kept and a restart
(trust/seen.py, trust/seenfile.py): a long session's next memory call reads only what its log
gained, and no point, kept, lost, damaged or edited, ever makes a session's label laxer."""

import json
import os
import stat

import pytest

from memoryd.home import Home
from memoryd.trust import risen, seenfile
from memoryd.trust.witness import Witness

from .test_service import write_log
from .test_witness import result, user

MOST = 8
SESSION = "mm-longlived"


@pytest.fixture
def home(tmp_path):
    home = Home(tmp_path / "home")
    home.index_dir.mkdir(parents=True)
    home.memory.mkdir()
    return home


@pytest.fixture
def starts(monkeypatch):
    """The byte each read of SESSION's log began at."""
    seen: list[int] = []
    real = Witness._read_from

    def recorded(f, start, state, path):
        if SESSION in str(path):
            seen.append(start)
        return real(f, start, state, path)

    monkeypatch.setattr(Witness, "_read_from", staticmethod(recorded))
    return seen


def _long_log(home: Home, records: int = 200) -> int:
    write_log(home.root, SESSION, [user("x" * 500) for _ in range(records)])
    return os.path.getsize(home.session_log(SESSION))


def _others(witness: Witness, n: int, prefix: str = "mm-other") -> None:
    """Calls of n other sessions, each with a log, enough to drop SESSION from those kept."""
    for i in range(n):
        name = f"{prefix}{i:05d}"
        write_log(witness.home.root, name, [user()])
        witness.stricter(name, "private", False)


@pytest.mark.parametrize("gap", ["dropped", "restarted"])
def test_the_next_call_reads_only_what_the_log_gained(home, starts, gap):
    size = _long_log(home)
    witness = Witness(home, most_seen=MOST)
    assert witness.stricter(SESSION, "private", False) == ("private", False)
    if gap == "dropped":
        _others(witness, 3 * MOST)
        assert SESSION not in witness._seen
    else:
        witness.close()
        witness = Witness(home, most_seen=MOST)
    write_log(home.root, SESSION, [result("secret", untrusted=True)])
    assert witness.stricter(SESSION, "private", False) == ("secret", True)
    assert starts == [0, size]


def test_a_log_replaced_is_read_whole_and_keeps_the_label_of_its_point(home, starts):
    write_log(home.root, SESSION, [user(), result("private", untrusted=True)])
    witness = Witness(home, most_seen=MOST)
    assert witness.stricter(SESSION, "public", False) == ("private", True)
    witness.close()
    log = home.session_log(SESSION)
    log.unlink()
    write_log(home.root, SESSION, [user("the same length, or near it"), user()])
    again = Witness(home, most_seen=MOST)
    assert again.stricter(SESSION, "public", False) == ("private", True)
    assert starts == [0, 0]


def test_a_log_rewritten_before_its_point_is_read_whole(home, starts):
    _long_log(home, records=20)
    witness = Witness(home, most_seen=MOST)
    witness.stricter(SESSION, "private", False)
    witness.close()
    log = home.session_log(SESSION)
    data = log.read_bytes()
    log.write_bytes(data[:-40] + b"y" * 39 + b"\n")  # the same file, its last bytes changed
    Witness(home, most_seen=MOST).stricter(SESSION, "private", False)
    assert starts == [0, 0]


@pytest.mark.parametrize(
    "content",
    [
        b"not json",
        b'{"points": 3}',
        b'{"points": [["mm-longlived", 1, 2]]}',
        b'{"points": [["../x", 1, 2, 3, "' + b"0" * 64 + b'", "private", false]]}',
        b'{"points": [["mm-longlived", 1, 2, 3, "zz", "private", false]]}',
        b'{"points": [["mm-longlived", 1, 2, 3, "' + b"0" * 64 + b'", "top", false]]}',
        b'{"points": [["mm-longlived", 1, 2, 3, "' + b"0" * 64 + b'", "private", 1]]}',
        b'{"points": [["mm-longlived", -1, 2, 3, "' + b"0" * 64 + b'", "private", false]]}',
        b'{"points": [["mm-longlived", 1, 2, 0, "' + b"0" * 64 + b'", "private", false]]}',
    ],
)
def test_a_file_not_of_its_shape_costs_a_whole_read_and_nothing_else(home, starts, content):
    seenfile.path(home).write_bytes(content)
    write_log(home.root, SESSION, [user(), result("secret", untrusted=True)])
    assert Witness(home, most_seen=MOST).stricter(SESSION, "public", False) == ("secret", True)
    assert starts == [0]


def test_a_fifo_in_its_place_is_not_waited_on(home, starts):
    os.mkfifo(seenfile.path(home))
    write_log(home.root, SESSION, [user()])
    assert Witness(home, most_seen=MOST).stricter(SESSION, "public", False) == ("public", False)
    assert starts == [0]


def test_a_point_edited_laxer_keeps_the_label_labels_jsonl_recorded(home, starts):
    write_log(home.root, SESSION, [user(), result("private", untrusted=True), user()])
    witness = Witness(home, most_seen=MOST)
    assert witness.stricter(SESSION, "public", False) == ("private", True)
    witness.close()
    assert risen.label(home, SESSION) == ("private", True)
    data = json.loads(seenfile.path(home).read_bytes())
    for point in data["points"]:
        point[5], point[6] = "public", False
    seenfile.path(home).write_text(json.dumps(data))
    again = Witness(home, most_seen=MOST)
    assert again.stricter(SESSION, "public", False) == ("private", True)
    assert starts[1] > 0  # read on from the point, at the label recorded outside it


def test_the_file_holds_no_text_and_is_the_owners_alone(home):
    write_log(home.root, SESSION, [user("my bank password is swordfish")])
    witness = Witness(home, most_seen=MOST)
    witness.stricter(SESSION, "private", False)
    witness.close()
    data = seenfile.path(home).read_bytes()
    assert b"swordfish" not in data and SESSION.encode() in data
    assert stat.S_IMODE(os.stat(seenfile.path(home)).st_mode) == 0o600


def test_points_kept_are_bounded(home, monkeypatch):
    monkeypatch.setattr("memoryd.trust.seen.MOST_POINTS", 20)
    witness = Witness(home, most_seen=MOST)
    _others(witness, 100)
    assert len(witness._seen._points) == 20
    assert len(witness._seen.points()) == 20 + MOST
