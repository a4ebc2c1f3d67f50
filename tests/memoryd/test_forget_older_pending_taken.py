"""Review on, a home an older memoryd forgot in: its forget dropped the staged writes carrying the
forgotten text from pending.jsonl, but its journal line named none of them (no "pending" in its
"forgot"). Today's memoryd says such a write, handed out before that forget, as probably taken by
it (naming its edit and date) in pending, accept, reject and at its start, never as lost nor with
the advice to take its line back from a backup, which holds the text the owner forgot. A write
handed out after it (or on a later day) whose line left the file is still said lost."""

import json
import logging

import pytest

from memoryd.errors import AdminRefused
from memoryd.journal.journal import Edit
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import Clock

DAY = "2026-09-24"
SECRET = "Owner's passport number is capybara-778."


def _open(root, clock: Clock) -> Memoryd:
    md = Memoryd(root, clock=clock)
    md.store.review_on = True
    return md


def _staged(md: Memoryd, text: str) -> str:
    said = md.call({"action": "add", "file": "user", "text": text})
    return said.split("pending as ")[1].split(";")[0]


def _older_forget(md: Memoryd, taken: list[str]) -> str:
    """A forget as a memoryd before forgot.pending made it: its line names no staged write, and
    the writes carrying its text leave pending.jsonl. Returns its edit id."""
    forgot = {"id": "session:s-gamma:0", "at": "2026-09-24T21:05Z", "keys": ["session:s-gamma:0"]}
    forgot["digests"] = ["aaab9f42e7320518d4b851cc6236e93e59149d16ba4663fe1d90a655338a8a46"]
    edit = Edit.model_validate(
        {
            **{"session": "owner", "call": None, "taint": None, "untrusted": False},
            **{"action": "forget", "file": None, "to": None, "before": [], "after": []},
            **{"notes": [], "forgot": forgot},
        }
    )
    line = md.store.journal.append(md.clock(), edit)
    _drop_lines(md, taken)
    return line.id


def _drop_lines(md: Memoryd, ids: list[str]) -> None:
    path = md.home.memory_file("pending.jsonl")
    kept = [raw for raw in path.read_text().splitlines() if json.loads(raw)["id"] not in ids]
    path.write_text("".join(raw + "\n" for raw in kept))


def _said(md: Memoryd) -> list[str]:
    return [line for line in md.admin("pending").splitlines() if line.startswith("(")]


def _taken_said(first: str, last: str, n: int, edit: str, path) -> str:
    which, was, it = (first, "was", "it") if n == 1 else (f"{first} to {last}", "were", "them")
    return (
        f"({n} staged write{'s' * (n > 1)} ({which}) memoryd answered as pending {was} probably "
        f"taken by forget {edit} on {DAY}, with the text the owner forgot: "
        f"{'it was' if n == 1 else 'they were'} handed out before that forget, and neither {path} "
        f"holds {it} nor the journal an accept or reject; an older memoryd's forget did not name "
        f"the staged writes it took. Nothing waits under {'that id' if n == 1 else 'those ids'})"
    )


def _refused(md: Memoryd, pending_id: str) -> list[str]:
    said = []
    for command in ("accept", "reject"):
        with pytest.raises(AdminRefused) as refused:
            md.admin(command, pending_id)
        said.append(str(refused.value))
    return said


def test_a_write_an_older_forget_took_is_said_taken_by_it_and_one_after_it_lost(tmp_path, caplog):
    clock = Clock()
    root = tmp_path / "home"
    md = _open(root, clock)
    path = md.home.memory_file("pending.jsonl")
    try:
        taken = _staged(md, SECRET)
        kept = _staged(md, "Owner likes tea.")
        clock.advance(minutes=1)
        edit = _older_forget(md, [taken])
        clock.advance(minutes=1)
        later = _staged(md, "Owner likes rain.")  # handed out after the forget: it says so
        gone = _staged(md, "Owner likes hills.")
        _drop_lines(md, [gone])  # removed by hand, after the forget: lost
        listed = md.admin("pending")
        assert listed.startswith(f"{kept}  ") and f"\n{later}  " in listed
        assert _said(md) == [
            f"(1 staged write ({gone}) memoryd answered as pending is gone: neither {path} holds "
            "it nor the journal an accept or reject: its line left the file (deleted, replaced "
            "by an older copy, or removed by hand). A backup made while they waited holds their "
            "lines: tar -xzOf ARCHIVE memory/pending.jsonl prints the lines and changes nothing "
            "(runbook: journal-lost))",
            _taken_said(taken, taken, 1, edit, path),
        ]
        for said in _refused(md, taken):
            assert said == (
                f"refused: {taken} was probably taken by forget {edit} on {DAY}, with the text "
                f"the owner forgot: it was handed out before that forget, and neither {path} "
                "holds it nor the journal an accept or reject (an older memoryd's forget did not "
                "name the staged writes it took); nothing waits under that id"
            )
        for said in _refused(md, gone):
            assert said.startswith(f"refused: {gone} was staged, but its line has left {path}")
        assert md.admin("accept", kept).startswith("accepted")
    finally:
        md.close()
    caplog.clear()
    with caplog.at_level(logging.INFO):
        md = _open(root, clock)  # a restart says each once: the lost one as a warning
    try:
        lost = _said(md)[0]
    finally:
        md.close()
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert [w for w in warned if "pending.jsonl" in w] == [f"{path}: {lost.strip('()')}"]
    told = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert f"{path}: {_taken_said(taken, taken, 1, edit, path).strip('()')}" in told


def test_each_write_is_named_by_the_first_older_forget_after_it(tmp_path):
    clock = Clock()
    md = _open(tmp_path / "home", clock)
    path = md.home.memory_file("pending.jsonl")
    try:
        first = [_staged(md, f"{SECRET} Copy {n}.") for n in range(2)]
        clock.advance(minutes=1)
        early = _older_forget(md, first)
        clock.advance(minutes=1)
        kept = _staged(md, "Owner likes tea.")
        second = _staged(md, "Owner's door code is 4711.")
        clock.advance(minutes=1)
        late = _older_forget(md, [second])
        assert md.admin("pending").startswith(f"{kept}  ")
        assert _said(md) == [
            _taken_said(first[0], first[1], 2, early, path),
            _taken_said(second, second, 1, late, path),
        ]
        assert _refused(md, first[1])[0].startswith(
            f"refused: {first[1]} was probably taken by forget {early} on {DAY}"
        )
        assert _refused(md, second)[1].startswith(
            f"refused: {second} was probably taken by forget {late} on {DAY}"
        )
    finally:
        md.close()


def test_a_write_of_a_day_after_every_older_forget_is_said_lost(tmp_path):
    clock = Clock()
    md = _open(tmp_path / "home", clock)
    try:
        taken = _staged(md, SECRET)
        edit = _older_forget(md, [taken])
        clock.advance(days=1)
        gone = _staged(md, "Owner likes hills.")
        _drop_lines(md, [gone])
        said = _said(md)
        assert len(said) == 2 and f"({gone}) memoryd answered as pending is gone" in said[0]
        assert said[1].startswith(f"(1 staged write ({taken}) memoryd answered as pending was")
        assert f"forget {edit} on {DAY}" in said[1] and "backup" not in said[1]
        assert "its line has left" in _refused(md, gone)[0]
    finally:
        md.close()


def test_a_forget_that_named_its_writes_says_them_forgotten_as_before(tmp_path):
    """Today's forget names the write it took: resolved by it, neither lost nor 'probably'."""
    clock = Clock()
    md = _open(tmp_path / "home", clock)
    try:
        md.call({"action": "note", "text": SECRET})
        taken = _staged(md, SECRET)
        edit = md.data("forget", id="note:0")["edits"][-1]
        assert md.admin("pending") == "no edits are waiting for review"
        for said in _refused(md, taken):
            assert said.startswith(f"refused: {taken} was forgotten by the owner (edit {edit})")
    finally:
        md.close()


def test_a_write_lost_after_an_older_forget_but_before_one_of_this_memoryd_is_said_lost(
    tmp_path, caplog
):
    """This memoryd's forget of something no staged write carries took none, and its line says
    so with an empty list: a write handed out before it, whose line later leaves pending.jsonl
    (an older copy of the file), is said lost with the advice to take it back from a backup,
    never taken by that forget. One handed out before an older memoryd's forget line (no list)
    is still said probably taken by it."""
    clock = Clock()
    md = _open(tmp_path / "home", clock)
    path = md.home.memory_file("pending.jsonl")
    try:
        md.say("s-chat", "my old locker code is 4411")
        taken = _staged(md, SECRET)
        clock.advance(minutes=1)
        older = _older_forget(md, [taken])
        clock.advance(minutes=1)
        kept = _staged(md, "Owner likes tea.")  # held: the writes after it came after the forget
        gone = _staged(md, "Prefers the window seat.")
        clock.advance(minutes=1)
        own = md.data("forget", id="session:s-chat:0")["edits"][-1]
        listed = md.admin("pending")
        assert listed.startswith(f"{kept}  ") and f"\n{gone}  " in listed
        _drop_lines(md, [gone])  # an older copy of the file, after this memoryd's forget
        assert _said(md) == [
            f"(1 staged write ({gone}) memoryd answered as pending is gone: neither {path} holds "
            "it nor the journal an accept or reject: its line left the file (deleted, replaced "
            "by an older copy, or removed by hand). A backup made while they waited holds their "
            "lines: tar -xzOf ARCHIVE memory/pending.jsonl prints the lines and changes nothing "
            "(runbook: journal-lost))",
            _taken_said(taken, taken, 1, older, path),
        ]
        for said in _refused(md, gone):
            assert said.startswith(f"refused: {gone} was staged, but its line has left {path}")
            assert own not in said
    finally:
        md.close()
    caplog.clear()
    with caplog.at_level(logging.INFO):
        _open(tmp_path / "home", clock).close()  # the start says it lost, as a warning
    [warned] = [r for r in caplog.records if f"({gone})" in r.getMessage()]
    assert warned.levelno == logging.WARNING
    assert warned.getMessage().startswith(f"{path}: 1 staged write ({gone}) memoryd answered as")
    assert "is gone" in warned.getMessage() and "tar -xzOf" in warned.getMessage()
    assert not [r for r in caplog.records if f"forget {own}" in r.getMessage()]
