"""import: every line checked before anything is written (a session, a time, a text that is not
one refuses the file, naming the line), the file read no further than its limit, the answer cut
to one reply, the writer given back between batches, an import stopped part way said as such, and
notes compared whole, as many times as they are there."""

import errno
import json
import os
import threading

import pytest

from memoryd.data import importing, importrun
from memoryd.errors import AdminRefused
from memoryd.memory import notewrites
from memoryd.owner import paging
from memoryd.writer import WRITE
from tests.memoryd.owner_data_harness import Memoryd

HEAD = {"format": "boxmaker-memory-export", "version": 1}
TIME = "2026-12-01T15:33:39Z"


def _prov(file: str, **over) -> dict:
    base = {"file": file, "session": "owner", "edit": None, "time": TIME}
    return {**base, "class": "private", "untrusted": False, **over}


def entry(text: str, **over) -> dict:
    return {"kind": "entry", "file": "memory.md", "text": text, "provenance": _prov("memory.md")}


def note(text: str, note: str = "noted", source: str | None = None, **over) -> dict:
    item = {"kind": "note", "note": note, "number": 0, "source": source, "text": text}
    return {**item, "provenance": _prov("notes.md", **over)}


def jsonl(items: list[dict], head: dict = HEAD) -> str:
    return "\n".join(json.dumps(x) for x in [head, *items]) + "\n"


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def hand(m: Memoryd, data: str | bytes, name: str = "in.jsonl") -> str:
    path = m.home.root / "backups" / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return name


def files(m: Memoryd) -> dict:
    return {p: p.read_bytes() for p in m.home.memory.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    "bad, reason",
    [
        (note("Hostile.", session="owner\n", untrusted=True), "line 3 has a provenance session"),
        (note("Late.", time="2026-12-01T15:33Z\n"), "line 3 has a provenance time"),
        (note("Never.", time="2026-13-45T99:99Z"), "line 3 has a provenance time"),
        ({**entry("x"), "text": ""}, "line 3 has an empty text"),
        ("[" * 50_000 + "]" * 50_000, "line 3 is not an export item"),
    ],
)
def test_a_bad_line_after_good_ones_refuses_the_file_before_anything_is_written(md, bad, reason):
    before = files(md)
    line = bad if isinstance(bad, str) else json.dumps(bad)
    name = hand(md, jsonl([entry("A good fact before it.")]) + line + "\n")
    for dry_run in (True, False):
        with pytest.raises(AdminRefused, match=reason) as e:
            md.admin("import", {"name": name, "dry_run": dry_run})
        assert "\n" not in str(e.value) and "nothing was imported" in str(e.value)
    assert files(md) == before


@pytest.mark.parametrize(
    "first, reason",
    [
        ("[" * 100_000 + "]" * 100_000, "line 1 is JSON nested too deeply"),
        (json.dumps({**HEAD, "version": "1"}), "format version as '1', not a whole number"),
        (json.dumps({**HEAD, "version": True}), "not a whole number"),
        (json.dumps({**HEAD, "version": 0}), "format 0, which no memoryd writes"),
        (json.dumps({**HEAD, "version": -1}), "format -1, which no memoryd writes"),
        (json.dumps({**HEAD, "version": 2}), "format 2, made by a newer memoryd"),
    ],
)
def test_a_bad_header_is_said_clearly(md, first, reason):
    name = hand(md, first + "\n" + json.dumps(entry("A fact.")) + "\n")
    with pytest.raises(AdminRefused, match=reason):
        md.admin("import", {"name": name, "dry_run": True})


class _Spy:
    """A file whose reads are noted."""

    def __init__(self, f, sizes: list):
        self.f, self.sizes = f, sizes

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.f.close()

    def fileno(self) -> int:
        return self.f.fileno()

    def read(self, n: int = -1) -> bytes:
        self.sizes.append(n)
        return self.f.read(n)


@pytest.fixture
def reads(monkeypatch) -> list:
    sizes: list = []
    real = importing.open_read
    monkeypatch.setattr(importing, "open_read", lambda path: _Spy(real(path), sizes))
    return sizes


def test_a_file_over_the_limit_is_refused_without_being_read(md, reads):
    with open(md.home.root / "backups" / "big.jsonl", "wb") as f:
        f.truncate(importing.IMPORT_MAX + 1)
    with pytest.raises(AdminRefused, match="over 67,108,864 bytes"):
        md.admin("import", {"name": "big.jsonl"})
    assert reads == []


def test_a_file_is_read_no_further_than_its_limit(md, reads, monkeypatch):
    monkeypatch.setattr(importing, "IMPORT_MAX", 100)
    name = hand(md, jsonl([entry("x" * 200)]))
    with pytest.raises(AdminRefused, match="over 100 bytes"):
        md.admin("import", {"name": name})
    assert all(0 <= n <= 101 for n in reads)


@pytest.mark.parametrize("kind", ["fifo", "symlink", "folder"])
def test_a_name_that_is_not_a_regular_file_is_refused_without_waiting(md, tmp_path, kind):
    path = md.home.root / "backups" / "odd.jsonl"
    if kind == "fifo":
        os.mkfifo(path, 0o600)
    elif kind == "symlink":
        (tmp_path / "real.jsonl").write_text(jsonl([entry("Through a link.")]))
        path.symlink_to(tmp_path / "real.jsonl")
    else:
        path.mkdir()
    answer: list = []

    def go():
        try:
            md.admin("import", {"name": "odd.jsonl"})
        except AdminRefused as e:
            answer.append(str(e))

    t = threading.Thread(target=go)
    t.start()
    t.join(10)
    assert not t.is_alive(), "the import waited on the file"
    assert answer and answer[0].startswith("refused: odd.jsonl cannot be read")
    assert "Through a link." not in md.home.memory_file("memory.md").read_text()


def test_the_answer_always_fits_one_reply_and_says_what_was_applied(md):
    junk = "\U000e0041" * 100  # a character repr() writes as ten
    items = [note(junk + str(i)) for i in range(2100)] + [entry("The applied fact.")]
    answer = md.admin("import", {"name": hand(md, jsonl(items))})
    assert len(answer.encode()) < paging.REPLY_MAX
    out = json.loads(answer)
    assert (out["applied"], out["skipped"]) == (1, 2100)
    assert "more lines not shown" in out["message"]
    assert "The applied fact." in md.home.memory_file("memory.md").read_text()


def test_other_writes_run_between_the_batches_of_an_import(md, monkeypatch):
    monkeypatch.setattr(importrun, "BATCH_SECONDS", 0.0)  # one item a batch
    order: list[str] = []
    real = importrun._batch

    def batch(service, *a):
        order.append("batch")
        if len(order) == 1:  # a write that arrives while the first batch runs
            service._writer.submit(WRITE, order.append, "other")
        return real(service, *a)

    monkeypatch.setattr(importrun, "_batch", batch)
    items = [note(f"Bulk note {i}.") for i in range(3)]
    out = md.data("import", name=hand(md, jsonl(items)))
    assert out["applied"] == 3
    assert order == ["batch", "other", "batch", "batch"]
    assert len(md.store.journal.records()) == 3


def test_an_import_stopped_part_way_says_what_was_applied_and_again_brings_the_rest(
    md, monkeypatch
):
    real = notewrites.append_notes
    calls = []

    def full(home, text):
        calls.append(text)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(home, text)

    monkeypatch.setattr(notewrites, "append_notes", full)
    name = hand(md, jsonl([note(f"Note {i}.") for i in range(5)]))
    with pytest.raises(AdminRefused) as e:
        md.admin("import", {"name": name})
    said = str(e.value)
    ids = [r.id for r in md.store.journal.records()]
    assert len(ids) == 2
    assert "stopped at item 3 of 5" in said and "No space left" in said
    assert f"imported before it: 2 items (edits {ids[0]} to {ids[1]})" in said
    assert "importing the file again brings the rest" in said
    monkeypatch.setattr(notewrites, "append_notes", real)
    out = md.data("import", name=name)
    assert (out["applied"], out["skipped"]) == (3, 2)
    assert md.home.memory_file("notes.md").read_text().count("Note 2.") == 1


def test_notes_with_the_same_text_all_come_through_and_only_once(tmp_path):
    a = Memoryd(tmp_path / "a")
    try:
        a.call({"action": "note", "text": "Took the 8:10 train."})
        a.call({"action": "note", "text": "Took the 8:10 train."})
        export = open(a.data("export")["path"], encoding="utf-8").read()
    finally:
        a.close()
    b = Memoryd(tmp_path / "b")
    try:
        name = hand(b, export)
        assert b.data("import", name=name)["applied"] == 2
        again = b.data("import", name=name)
        assert (again["applied"], again["skipped"]) == (0, 2)
        assert b.home.memory_file("notes.md").read_text().count("Took the 8:10 train.") == 2
        other = note("Took the 8:10 train.", time="2026-12-02T09:00:00Z")
        assert b.data("import", name=hand(b, jsonl([other]), "o.jsonl"))["applied"] == 1
    finally:
        b.close()


def test_a_file_damaged_between_two_batches_stops_the_import_saying_how_far(md, monkeypatch):
    monkeypatch.setattr(importrun, "BATCH_SECONDS", 0.0)  # one item a batch
    real = importrun._batch

    def batch(service, parsed, state, claims, done):
        if done.at == 1:
            md.home.memory_file("memory.md").write_bytes(b"\xff damaged\n")
        return real(service, parsed, state, claims, done)

    monkeypatch.setattr(importrun, "_batch", batch)
    name = hand(md, jsonl([note("First."), note("Second.")]))
    reason = "stopped at item 2 of 2 .*not valid UTF-8.*before it: 1 item "
    with pytest.raises(AdminRefused, match=reason):
        md.admin("import", {"name": name})
    assert len(md.store.journal.records()) == 1
