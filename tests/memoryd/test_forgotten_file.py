"""memory/forgotten.jsonl as the owner may leave it: a last line without its newline, a damaged
line, notes.md renumbered by a hand edit. What was forgotten stays forgotten; nothing else is
hidden."""

import json
import logging
import os
import stat

import pytest

from memoryd.errors import ForgottenUnreadable
from memoryd.home import Home
from memoryd.journal import (
    forgetread,
    forgotten,
    forgottenlines,
    forgottenmarker,
    forgottensaid,
    forgottenwrite,
)
from tests.memoryd.owner_data_harness import Memoryd

KEY = '{"key": "session:s-one:0", "time": "2026-09-24T20:00Z", "edit": "2026-09-24-0001"}'


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


@pytest.fixture
def home(tmp_path):
    h = Home(tmp_path / "h")
    h.memory.mkdir(parents=True, mode=0o700)
    return h


@pytest.mark.parametrize(
    "before, kept",
    [
        ("", set()),
        (KEY + "\n", {"session:s-one:0"}),
        (KEY, {"session:s-one:0"}),  # an editor dropped the last newline
        ('{"key": "session:s-o', set()),  # a torn append stays a line of its own
    ],
)
def test_a_key_added_is_on_a_line_of_its_own(home, before, kept):
    if before:
        forgotten.path(home).write_text(before)
    forgottenwrite.add(home, "session:s-two:0", "2026-09-24T20:01Z", "2026-09-24-0002")
    assert forgotten.listed(home) == kept | {"session:s-two:0"}
    data = forgotten.path(home).read_bytes()
    assert data.endswith(b"\n") and data.splitlines()[-1].startswith(b'{"key": "session:s-two:0"')
    if not before:  # made by add
        assert stat.S_IMODE(os.stat(forgotten.path(home)).st_mode) == 0o600


def test_after_a_lost_newline_the_next_forget_keeps_both_records_forgotten(md):
    md.say("s-one", "The locker code is qz4711.", "Noted.")
    md.say("s-two", "My PIN is 8086-secret.", "Noted.")
    md.data("forget", id="session:s-one:0")
    path = forgotten.path(md.home)
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    md.data("forget", id="session:s-two:0")
    md.index.reindex()
    assert md.recall("locker").startswith("(no matches")
    assert md.recall("PIN").startswith("(no matches")


def zeroed(data: bytes) -> bytes:
    return b"\0" * len(data)  # a power cut on ext4 leaves a block of zeros


def key_misspelt(data: bytes) -> bytes:
    return data.replace(b'"key"', b'"kez"')


def torn(data: bytes) -> bytes:
    """Killed half way through the first line (a forget writes its keys, then its digests)."""
    return data[: data.index(b"\n") // 2]


@pytest.mark.parametrize("damage", [zeroed, key_misspelt, torn])
@pytest.mark.parametrize("ref", ["session:s-one:0", "The locker code is qz4711."])
def test_a_damaged_line_is_logged_once_and_unforgets_nothing(md, caplog, damage, ref):
    md.say("s-one", "The locker code is qz4711.", "Noted.")
    md.data("forget", id=ref)  # by its id, or by its words (the record holds them)
    path = forgotten.path(md.home)
    path.write_bytes(damage(path.read_bytes()))
    with caplog.at_level(logging.ERROR, logger=forgottensaid.__name__):
        md.index.reindex()
        md.index.catch_up_all()
        assert md.recall("locker").startswith("(no matches")
    said = [r.getMessage() for r in caplog.records if r.name == forgottensaid.__name__]
    assert len(said) == 1, said
    assert f"{path}: line 1 damaged" in said[0] and "\n" not in said[0]
    assert "Noted." in md.recall("Noted")


def test_forget_lines_written_before_they_held_their_keys_still_give_their_id(home):
    home.edits.mkdir(mode=0o700)
    lines = [
        {"id": "2026-09-24-0001", "action": "forget", "forgot": {"id": "session:a:1"}},
        {"id": "2026-09-24-0002", "action": "forget", "forgot": {"id": "text"}},
        {"id": "2026-09-24-0003", "action": "forget", "forgot": {"id": "x", "keys": ["note:4"]}},
        {"id": "2026-09-24-0004", "action": "add", "forgot": {"id": "session:b:1"}},
        {"id": "2026-09-24-0005", "action": "forget", "forgot": {"keys": ["bad key", 7]}},
    ]
    (home.edits / "2026-09.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert forgotten.journal_keys(home) == {"session:a:1", "note:4"}
    forgotten.path(home).write_text("not json\n")
    assert forgotten.listed(home) == {"session:a:1", "note:4"}
    forgotten.path(home).write_text(KEY + "\n")  # parses whole, yet lacks the journal's keys
    assert forgotten.listed(home) == {"session:s-one:0", "session:a:1", "note:4"}


NOTES = ["My secret is quokka.", "Alpaca dentist on Monday.", "Bison yoga on Friday."]
WORDS = ["quokka", "Alpaca", "Bison"]


def hand_edit(md: Memoryd, drop: int) -> None:
    """The owner deletes note number drop of notes.md (header and text) in an editor."""
    path = md.home.memory_file("notes.md")
    data = path.read_text()
    starts = [i for i, line in enumerate(data.splitlines(True)) if line.startswith("§ ")]
    lines = data.splitlines(True)
    end = starts[drop + 1] if drop + 1 < len(starts) else len(lines)
    path.write_text("".join(lines[: starts[drop]] + lines[end:]))


@pytest.mark.parametrize(
    "forget, drop, live",
    [
        (0, 0, [1, 2]),  # the marker itself deleted: the note after it takes its number
        (1, 0, [2]),  # a note before the forgotten one deleted: the marker moves up one
        (1, 1, [0, 2]),  # the marker deleted: note 2 becomes note 1
    ],
)
def test_a_hand_edit_that_renumbers_notes_hides_no_live_note(md, forget, drop, live):
    for text in NOTES:
        md.call({"action": "note", "text": text})
    md.data("forget", id=f"note:{forget}")
    hand_edit(md, drop)
    md.index.catch_up_notes()
    for check in ("caught up", "reindexed"):
        for n in live:
            assert NOTES[n] in md.recall(WORDS[n]), (check, n)
        assert md.recall(WORDS[forget]).startswith("(no matches"), check
        assert forgottenmarker.MARKER_PREFIX not in md.recall("forgotten owner"), check
        md.index.reindex()
    number = live[0] - (1 if drop < live[0] else 0)  # where the first live note stands now
    assert forgotten.note_key(number) not in forgotten.keys(md.home)
    # The hand edit renumbered notes.md: promote takes the number the owner's search prints now.
    assert f"note:{number}" in md.admin("search", {"query": WORDS[live[0]], "k": 10})
    out = md.admin("promote", {"ref": f"note:{number}", "file": "memory"})
    assert out.startswith(f"promoted note:{number}")


def test_a_plain_note_key_still_hides_the_marker_standing_at_its_number(md):
    for text in NOTES:
        md.call({"action": "note", "text": text})
    md.data("forget", id="note:1")
    assert "note:1" in forgotten.keys(md.home)
    md.index.reindex()
    with md.index.reader() as conn:
        numbers = [r[0] for r in conn.execute("SELECT record FROM sources WHERE kind = 'noted'")]
    assert sorted(numbers) == [0, 2]
    with pytest.raises(Exception, match="was forgotten by the owner"):
        md.admin("promote", {"ref": "note:1", "file": "memory"})


def whole_lines_only(path) -> None:
    """The owner deletes the lines memoryd's log calls damaged."""
    kept = []
    for raw in path.read_bytes().split(b"\n"):
        try:
            json.loads(raw)
        except ValueError:
            continue
        kept.append(raw + b"\n")
    path.write_bytes(b"".join(kept))


def said(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == forgottensaid.__name__]


def test_a_key_torn_by_a_kill_is_written_back_whole_at_start(md, caplog):
    md.say("s-one", "The locker code is qz4711.", "Noted.")
    md.data("forget", id="session:s-one:0")
    path = forgotten.path(md.home)
    path.write_bytes(path.read_bytes()[:30])  # killed half way through the append
    with caplog.at_level(logging.ERROR, logger=forgottensaid.__name__):
        forgottenwrite.mend(md.home)  # as server.prepare does at start
        forgottenwrite.mend(md.home)  # again: nothing left to write, nothing said
    assert forgotten.held(md.home) == {"session:s-one:0"}
    assert len(said(caplog)) == 1 and "1 key it lacked written back to it" in said(caplog)[0]
    whole_lines_only(path)
    md.index.reindex()
    assert md.recall("locker").startswith("(no matches")


def test_a_forget_run_again_writes_a_key_held_only_through_the_journal(md, monkeypatch):
    md.say("s-one", "The locker code is qz4711.", "Noted.")
    with monkeypatch.context() as m:  # killed after the journal line: the rows stay
        m.setattr("memoryd.data.forget.purge", lambda *a: None)
        md.data("forget", id="session:s-one:0")
    path = forgotten.path(md.home)
    path.write_bytes(path.read_bytes()[:30])
    assert "session:s-one:0" in forgotten.listed(md.home)  # through the journal only
    assert forgotten.held(md.home) == set()
    md.data("forget", id="session:s-one:0")  # the owner runs it again
    assert forgotten.held(md.home) == {"session:s-one:0"}
    whole_lines_only(path)
    md.index.reindex()
    assert md.recall("locker").startswith("(no matches")


def test_a_removed_file_keeps_the_journals_keys_and_is_written_back(md, caplog):
    md.say("s-one", "The locker code is qz4711.", "Noted.")
    md.say("s-two", "My PIN is 8086-secret.", "Noted.")
    with caplog.at_level(logging.ERROR, logger=forgottensaid.__name__):
        md.data("forget", id="session:s-one:0")
        md.data("forget", id="session:s-two:0")
        assert said(caplog) == []  # the first forget makes the file: nothing is missing
        path = forgotten.path(md.home)
        path.unlink()
        md.index.reindex()  # readers take the journal's keys and write nothing
        assert md.recall("locker").startswith("(no matches")
        assert md.recall("PIN").startswith("(no matches")
        assert not path.exists()
        assert len(said(caplog)) == 1 and f"{path} is missing" in said(caplog)[0]
        forgottenwrite.mend(md.home)
    assert forgotten.held(md.home) == {"session:s-one:0", "session:s-two:0"}
    assert "2 keys it lacked written back to it" in said(caplog)[1]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    md.index.reindex()
    assert md.recall("PIN").startswith("(no matches")


@pytest.mark.parametrize("left", ["", "a line lost\n"])
def test_a_file_that_lost_lines_yet_parses_keeps_the_journals_keys(md, caplog, left):
    """Emptied (a disk that lost its blocks, an owner's editor), or one key's line deleted: the
    file still parses, yet nothing it lost comes back to the index, and start writes it back."""
    md.say("s-one", "The locker code is qz4711.", "Noted.")
    md.say("s-two", "My PIN is 8086-secret.", "Noted.")
    md.data("forget", id="session:s-one:0")
    md.data("forget", id="session:s-two:0")
    path = forgotten.path(md.home)
    kept = [line for line in path.read_text().splitlines(True) if "s-two" in line]
    path.write_text("" if not left else "".join(kept))
    with caplog.at_level(logging.ERROR, logger=forgottensaid.__name__):
        md.index.reindex()
        assert md.recall("locker").startswith("(no matches")
        assert md.recall("PIN").startswith("(no matches")
        forgottenwrite.mend(md.home)  # as start does
        forgottenwrite.mend(md.home)  # again: nothing left to write, nothing said again
    assert forgotten.held(md.home) == {"session:s-one:0", "session:s-two:0"}
    written = [line for line in said(caplog) if "it lacked written back to it" in line]
    assert len(written) == 1 and f"{path} lacks " in written[0]
    whole_lines_only(path)


def month(home: Home, name: str, lines: list[dict]) -> None:
    home.edits.mkdir(mode=0o700, exist_ok=True)
    with open(home.edits / name, "a") as f:
        f.write("".join(json.dumps(x) + "\n" for x in lines))


ADD = {"id": "2026-08-01-0001", "action": "add", "file": "memory.md", "after": ["tea"]}


def test_with_nothing_forgotten_a_journal_month_is_read_again_only_once_changed(home, monkeypatch):
    month(home, "2026-08.jsonl", [ADD])
    month(home, "2026-09.jsonl", [ADD])
    reads = []
    real = forgetread.open_read
    monkeypatch.setattr(forgetread, "open_read", lambda p: reads.append(p) or real(p))
    for _ in range(3):
        assert forgotten.keys(home) == set()
    assert len(reads) == 2
    month(home, "2026-09.jsonl", [ADD])
    assert forgotten.keys(home) == set()
    assert reads[2:] == [home.edits / "2026-09.jsonl"]


OLD = {"id": "2026-05-01-0003", "action": "forget", "forgot": {"id": "memory.md:2", "at": "x"}}


@pytest.mark.parametrize("state", ["whole", "damaged", "missing"])
def test_forget_lines_of_an_older_memoryd_are_named_when_the_file_cannot_be_trusted(
    home, caplog, monkeypatch, state
):
    month(home, "2026-05.jsonl", [OLD])
    if state != "missing":
        forgotten.path(home).write_text(KEY + "\n" + ("not json\n" if state == "damaged" else ""))
    reads = []
    real = forgetread.open_read
    monkeypatch.setattr(forgetread, "open_read", lambda p: reads.append(p) or real(p))
    with caplog.at_level(logging.ERROR, logger=forgottensaid.__name__):
        forgottenwrite.mend(home)
        forgotten.listed(home)
    if state == "whole":  # the journal is read, yet the file lacks nothing it could give back
        assert reads == [home.edits / "2026-05.jsonl"] and said(caplog) == []
        return
    assert len(said(caplog)) == 1, said(caplog)
    line = said(caplog)[0]
    assert "forget line 2026-05-01-0003 of the journal" in line and "names no key" in line
    assert "\n" not in line


def test_an_unreadable_file_refuses_recall_in_one_line_and_recall_comes_back(md, monkeypatch):
    """Permissions taken from it: what was forgotten is not known, so recall waits, saying so
    and naming the file, rather than risk finding it (never an internal error)."""
    md.say("s-one", "The locker code is qz4711.", "Noted.")
    md.data("forget", id="session:s-one:0")
    path = forgotten.path(md.home)
    real = forgottenlines.open_read

    def denied(where):
        if where == path:
            raise PermissionError(13, "Permission denied", str(where))
        return real(where)

    monkeypatch.setattr(forgottenlines, "open_read", denied)
    path.touch()  # a new stamp: read again
    with pytest.raises(ForgottenUnreadable) as refused:
        md.recall("locker")
    assert str(refused.value) == (
        f"{path} cannot be read (Permission denied): what the owner made memoryd forget is not "
        "known, so recall and indexing wait until it can be; give it back to memoryd's user "
        "(mode 600)"
    )
    monkeypatch.undo()
    path.touch()
    assert md.recall("locker").startswith("(no matches")
