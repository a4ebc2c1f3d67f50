"""The journal's index by file answers as the journal itself does, kept, saved, reloaded or
rebuilt; a saved copy that does not fit the journal is never used."""

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.errors import MemorydError
from memoryd.home import Home
from memoryd.journal import byfile, scan
from memoryd.journal.byfile import JournalIndex, walk_back
from memoryd.journal.journal import IDENTITY_FILES
from memoryd.memory import entries
from memoryd.memory.store import MemoryStore
from tests.callargs import loose_call
from tests.memoryd.store_helpers import SOUL_STARTER, Clock, args, memory_path, owner

CLASSES = ("public", "private", "secret")


def store_on(root: Path, clock: Clock) -> MemoryStore:
    store = MemoryStore(
        Home(root), soul_starter=SOUL_STARTER, now=clock, max_class="secret", review=False
    )
    store.ensure()
    return store


def caller(number: int, klass: str) -> dict:
    return {"session": f"mm-s{number:04d}", "call_id": "c", "taint": klass, "untrusted": False}


def current(store: MemoryStore, file: str) -> list[str]:
    return entries.parse(memory_path(store, file).read_text())


def truth(store: MemoryStore, file: str) -> tuple:
    """What the journal alone says of file: its latest line, and the class source of each entry
    the file holds now and the latest line found (the ones an edit or an undo can move)."""
    months = store.journal.month_files()
    last = scan.last_with_to(months, file)
    if last is None:
        return None, [], {}
    texts = list(dict.fromkeys(last.after + last.before))
    return last.id, last.after, walk_back(months, file, texts)


def answers(index: JournalIndex, file: str, texts: list[str]) -> tuple:
    latest = index.latest(file)
    return (latest.id if latest else None), index.last_after(file), index.came_with(file, texts)


def run(store: MemoryStore, clock: Clock, op: tuple) -> None:
    kind, number, klass, file_arg = op
    file = f"{file_arg}.md"
    held = current(store, file)
    clock.advance(seconds=1)
    try:
        if kind == "add":
            text = f"entry {number}"
            store.call(
                *loose_call(args(action="add", file=file_arg, text=text), **caller(number, klass))
            )
        elif kind == "remove" and held:
            old = held[number % len(held)]
            store.call(
                *loose_call(args(action="remove", file=file_arg, old=old), **caller(number, klass))
            )
        elif kind == "move" and held:
            keep = [{"old": e} for e in held]
            keep[number % len(held)] = {"old": held[number % len(held)], "move": True}
            call = {"action": "consolidate", "file": file_arg, "entries": keep}
            store.call(*loose_call(json.dumps(call), **caller(number, klass)))
        elif kind == "undo":
            latest = scan.last_with_to(store.journal.month_files(), file)
            if latest is not None:
                store.undo(latest.id)
        elif kind == "hand":
            memory_path(store, file).write_text("\n§\n".join([*held[1:], f"hand {number}"]) + "\n")
        elif kind == "note":
            store.call(
                *loose_call(args(action="note", text=f"note {number}"), **caller(number, klass))
            )
        elif kind == "promote":
            owner(store, "promote", {"ref": f"note:{number % 3}", "file": file_arg})
    except MemorydError:
        pass  # a refused edit (a duplicate, over the limit, no such note) changes nothing


OPS = st.tuples(
    st.sampled_from(["add", "add", "remove", "move", "undo", "hand", "note", "promote"]),
    st.integers(0, 40),
    st.sampled_from(CLASSES),
    st.sampled_from(["memory", "user"]),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=1, max_size=30))
def test_the_index_kept_saved_or_rebuilt_answers_as_the_journal(ops):
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        patch.setattr(byfile, "SAVE_BYTES", 0)  # saved at every catch-up
        clock = Clock()
        store = store_on(Path(tmp) / "home", clock)
        for op in ops:
            run(store, clock, op)
            for file in IDENTITY_FILES:
                latest, after, classes = truth(store, file)
                texts = list(classes)
                assert answers(store.journal_index, file, texts) == (latest, after, classes)
        saved = store.journal_index.path
        for file in IDENTITY_FILES:
            latest, after, classes = truth(store, file)
            loaded = JournalIndex(store.journal, saved)
            assert answers(loaded, file, list(classes)) == (latest, after, classes)
            rebuilt = JournalIndex(store.journal, Path(tmp) / "none.json")
            assert answers(rebuilt, file, list(classes)) == (latest, after, classes)


def built(tmp_path: Path, count: int = 6) -> MemoryStore:
    clock = Clock()
    store = store_on(tmp_path / "home", clock)
    store.call(*loose_call(args(action="add", file="memory", text="oldest"), **caller(1, "secret")))
    for number in range(count):
        clock.advance(seconds=1)
        store.call(
            *loose_call(
                args(action="add", file="memory", text=f"e{number}"), **caller(2, "private")
            )
        )
    return store


def never_walk(*_args, **_kwargs):
    raise AssertionError("walked the journal back")


def test_a_saved_copy_that_fits_the_journal_is_used_without_walking(tmp_path, monkeypatch):
    monkeypatch.setattr(byfile, "SAVE_BYTES", 0)
    store = built(tmp_path)
    assert store.journal_index.path.exists()
    monkeypatch.setattr(byfile, "walk_back", never_walk)
    loaded = JournalIndex(store.journal, store.journal_index.path)
    assert loaded.came_with("memory.md", ["oldest"]) == {"oldest": "secret"}
    assert loaded.latest("memory.md").after[-1] == "e5"


def _truncate_last_line(store: MemoryStore) -> None:
    path = store.journal.month_files()[-1]
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))


def _rewrite_in_place(store: MemoryStore) -> None:
    path = store.journal.month_files()[-1]
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"e5"', b'"E5"'))


def _replace_month(store: MemoryStore) -> None:
    path = store.journal.month_files()[-1]
    copy = path.with_name("copy")
    shutil.copy(path, copy)
    copy.replace(path)  # a new inode: the file was written again by someone


def _add_an_older_month(store: MemoryStore) -> None:
    line = {"id": "2020-01-01-0001", "to": "memory.md", "before": [], "after": ["oldest"]}
    (store.home.edits / "2020-01.jsonl").write_text(json.dumps(line) + "\n")


def _damage_copy(store: MemoryStore) -> None:
    store.journal_index.path.write_bytes(b'{"format": 1, "months": [["x", 1')


def _other_format(store: MemoryStore) -> None:
    path = store.journal_index.path
    path.write_text(json.dumps({**json.loads(path.read_text()), "format": 99}))


@pytest.mark.parametrize(
    "change",
    [
        _truncate_last_line,
        _rewrite_in_place,
        _replace_month,
        _add_an_older_month,
        _damage_copy,
        _other_format,
    ],
)
def test_a_saved_copy_that_does_not_fit_the_journal_is_rebuilt(tmp_path, monkeypatch, change):
    monkeypatch.setattr(byfile, "SAVE_BYTES", 0)
    store = built(tmp_path)
    change(store)
    monkeypatch.setattr(byfile, "SAVE_BYTES", 1 << 40)  # keep the changed copy as it is
    for path in (store.journal_index.path, tmp_path / "none.json"):
        index = JournalIndex(store.journal, path)
        latest, after, classes = truth(store, "memory.md")
        assert answers(index, "memory.md", list(classes)) == (latest, after, classes)


@pytest.mark.parametrize("change", [_truncate_last_line, _rewrite_in_place, _replace_month])
def test_a_journal_changed_under_a_running_index_is_read_again(tmp_path, change):
    store = built(tmp_path)
    index = store.journal_index
    index.catch_up()
    change(store)
    latest, after, classes = truth(store, "memory.md")
    assert answers(index, "memory.md", list(classes)) == (latest, after, classes)


def test_a_save_cut_short_leaves_the_old_copy_and_its_leftover_is_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(byfile, "SAVE_BYTES", 0)
    store = built(tmp_path)
    old = store.journal_index.path.read_bytes()
    leftover = store.journal_index.path.with_name(".journal-index.json.abc123.tmp")
    leftover.write_bytes(old[:10])  # what a crash inside atomic_write leaves
    index = JournalIndex(store.journal, store.journal_index.path)
    assert index.came_with("memory.md", ["oldest"]) == {"oldest": "secret"}
    assert not leftover.exists()


def test_the_latest_edit_is_read_from_the_journal_not_taken_from_the_copy(tmp_path, monkeypatch):
    monkeypatch.setattr(byfile, "SAVE_BYTES", 0)
    store = built(tmp_path)
    path = store.journal_index.path
    saved = json.loads(path.read_text())
    saved["files"]["memory.md"]["offset"] = 0  # where the first edit's line starts
    path.write_text(json.dumps(saved))
    monkeypatch.setattr(byfile, "SAVE_BYTES", 1 << 40)
    latest = JournalIndex(store.journal, path).latest("memory.md")
    assert latest is not None and latest.after == ["oldest", *(f"e{n}" for n in range(6))]


def test_a_torn_last_line_is_read_past_once_the_next_edit_ends_it(tmp_path, monkeypatch):
    monkeypatch.setattr(byfile, "SAVE_BYTES", 0)
    store = built(tmp_path)
    month = store.journal.month_files()[-1]
    with open(month, "ab") as f:  # what a crash in the middle of an append leaves
        f.write(b'{"id": "2026-09-24-0099", "to": "memory.md", "after": ["tor')
    store.journal_index.catch_up()  # saved while the journal ends torn
    store.call(
        *loose_call(args(action="remove", file="memory", old="oldest"), **caller(3, "private"))
    )
    for index in (store.journal_index, JournalIndex(store.journal, store.journal_index.path)):
        latest, after, classes = truth(store, "memory.md")
        assert answers(index, "memory.md", list(classes)) == (latest, after, classes)
        assert after == [f"e{n}" for n in range(6)]
    head = memory_path(store, "notes.md").read_text().splitlines()[0]
    assert head.endswith(" · secret")  # the class of the edit that brought it in, before the tear


def test_the_resolved_pending_ids_are_those_the_journal_names(tmp_path, monkeypatch):
    monkeypatch.setattr(byfile, "SAVE_BYTES", 0)
    store = MemoryStore(
        Home(tmp_path / "home"), soul_starter=SOUL_STARTER, now=Clock(), review=True
    )
    store.ensure()
    for number in range(4):
        store.call(
            *loose_call(
                args(action="add", file="memory", text=f"e{number}"), **caller(1, "private")
            )
        )
    owner(store, "accept", "p-2026-09-24-0002")
    owner(store, "reject", "p-2026-09-24-0003")
    months = store.journal.month_files()
    assert scan.pending_ids(months) == {"p-2026-09-24-0002", "p-2026-09-24-0003"}
    for path in (store.journal_index.path, tmp_path / "none.json"):
        assert JournalIndex(store.journal, path).resolved_pending() == scan.pending_ids(months)
    assert store.journal_index.resolved_pending() == scan.pending_ids(months)
    listed = owner(store, "pending")
    assert "p-2026-09-24-0001" in listed and "p-2026-09-24-0004" in listed
    assert "p-2026-09-24-0002" not in listed and "p-2026-09-24-0003" not in listed
