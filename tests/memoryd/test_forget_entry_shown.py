"""forget memory.md:N / user.md:N names the entry bxctl memory stats last printed under N: a write
since (a session's remove, an add, an undo, a hand edit) moves the numbers, and forget, which cannot
be undone, must never erase the entry that moved into N's place."""

import json

import pytest

from memoryd.errors import AdminRefused
from memoryd.memory import shown
from tests.memoryd.owner_data_harness import Memoryd

OLD = "Old preference to erase."
KEEP = "Allergic to penicillin."
LATER = "Takes the train on Fridays."


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def _stats(md: Memoryd) -> str:
    return md.admin("stats", {"days": 30, "json": False})


@pytest.mark.parametrize("file", ["user", "memory"])
def test_an_entry_removed_since_stats_is_refused_and_nothing_is_forgotten(md, file):
    md.call({"action": "add", "file": file, "text": OLD})
    md.call({"action": "add", "file": file, "text": KEEP})
    assert f"{file}.md:1: {OLD}" in _stats(md)
    md.call({"action": "remove", "file": file, "old": OLD})
    before = md.home.memory_file(f"{file}.md").read_bytes()
    for dry_run in (True, False):
        with pytest.raises(AdminRefused) as refused:
            md.admin("forget", {"id": f"{file}.md:1", "dry_run": dry_run})
        said = str(refused.value)
        assert f"no longer holds the entry bxctl memory stats printed as {file}.md:1" in said
        assert "run bxctl memory stats" in said and "\n" not in said
    assert md.home.memory_file(f"{file}.md").read_bytes() == before


def test_an_entry_moved_since_stats_is_the_one_forgotten(md):
    md.call({"action": "add", "file": "user", "text": OLD})
    md.call({"action": "add", "file": "user", "text": KEEP})
    _stats(md)  # user.md:2 is KEEP
    md.call({"action": "remove", "file": "user", "old": OLD})
    md.call({"action": "add", "file": "user", "text": LATER})  # user.md:2 is LATER now
    preview = md.data("forget", id="user.md:2", dry_run=True)
    assert preview["texts"] == [KEEP]
    assert "entry 1 now" in preview["what"]
    md.admin("forget", {"id": "user.md:2"})
    assert md.home.memory_file("user.md").read_text() == LATER + "\n"


def test_a_number_stats_did_not_print_is_refused(md):
    md.call({"action": "add", "file": "user", "text": KEEP})
    _stats(md)
    md.call({"action": "add", "file": "user", "text": LATER})
    with pytest.raises(AdminRefused) as refused:
        md.admin("forget", {"id": "user.md:2"})
    assert "printed no user.md:2" in str(refused.value)
    assert LATER in md.home.memory_file("user.md").read_text()


def test_the_last_stats_counts(md):
    md.call({"action": "add", "file": "memory", "text": OLD})
    md.call({"action": "add", "file": "memory", "text": KEEP})
    _stats(md)
    md.call({"action": "remove", "file": "memory", "old": OLD})
    assert f"memory.md:1: {KEEP}" in _stats(md)
    md.admin("forget", {"id": "memory.md:1"})
    assert md.home.memory_file("memory.md").read_text() == ""


def test_without_a_stats_of_this_memoryd_the_entry_at_n_now_is_taken(md):
    md.call({"action": "add", "file": "user", "text": KEEP})
    assert shown.printed(md.index, "user.md") is None
    assert md.data("forget", id="user.md:1", dry_run=True)["texts"] == [KEEP]


def test_what_stats_printed_counts_across_a_restart(tmp_path):
    """Every upgrade and settings change restarts memoryd between a stats and a forget: the
    entry the owner saw is still the one taken, and one a session removed meanwhile is refused,
    never the entry that moved into its number."""
    first = Memoryd(tmp_path / "home")
    first.call({"action": "add", "file": "memory", "text": OLD})
    first.call({"action": "add", "file": "memory", "text": KEEP})
    assert f"memory.md:1: {OLD}" in _stats(first)
    first.close()
    again = Memoryd(tmp_path / "home")
    try:
        again.call({"action": "remove", "file": "memory", "old": OLD})
        with pytest.raises(AdminRefused) as refused:
            again.admin("forget", {"id": "memory.md:1"})
        assert "no longer holds the entry bxctl memory stats printed as memory.md:1" in str(
            refused.value
        )
        assert KEEP in again.home.memory_file("memory.md").read_text()
        assert [p.name for p in again.home.index_dir.iterdir() if p.name.endswith(".tmp")] == []
    finally:
        again.close()


@pytest.mark.parametrize("damage", ["{not json", "[1, 2]", '{"memory.md": [12345]}', ""])
def test_a_damaged_saved_print_refuses_forget_by_number_until_stats(tmp_path, damage):
    """A print that cannot be read back is not "no stats since the start": the entry standing
    at the number now may be another than the owner saw, and a forget cannot be undone."""
    first = Memoryd(tmp_path / "home")
    first.call({"action": "add", "file": "memory", "text": OLD})
    first.call({"action": "add", "file": "memory", "text": KEEP})
    assert f"memory.md:1: {OLD}" in _stats(first)
    first.call({"action": "remove", "file": "memory", "old": OLD})  # KEEP is first now
    first.close()
    (tmp_path / "home" / "index" / "shown.json").write_text(damage)
    again = Memoryd(tmp_path / "home")
    try:
        for dry_run in (True, False):
            with pytest.raises(AdminRefused) as refused:
                again.data("forget", id="memory.md:1", dry_run=dry_run)
            assert "the numbers the last bxctl memory stats printed cannot be read back" in str(
                refused.value
            )
            assert "shown.json is damaged" in str(refused.value)
        assert KEEP in again.home.memory_file("memory.md").read_text()
        assert f"memory.md:1: {KEEP}" in _stats(again)  # stats again: numbers hold again
        assert again.data("forget", id="memory.md:1", dry_run=True)["texts"] == [KEEP]
    finally:
        again.close()


def test_a_forget_leaves_its_text_in_no_saved_print(tmp_path):
    """stats saved what it printed (index/shown.json): the forget puts its marker there, as
    everywhere memoryd holds the text, and the numbers stay those the owner saw."""
    md = Memoryd(tmp_path / "home")
    try:
        md.call({"action": "add", "file": "memory", "text": OLD})
        md.call({"action": "add", "file": "memory", "text": KEEP})
        _stats(md)
        md.data("forget", id="memory.md:1")
        saved = (md.home.index_dir / "shown.json").read_text()
        assert OLD not in saved and KEEP in saved
        assert json.loads(saved)["memory.md"][1] == KEEP
        assert md.data("forget", id="memory.md:2", dry_run=True)["texts"] == [KEEP]
    finally:
        md.close()


def test_a_stats_read_by_a_program_does_not_change_what_memory_md_n_names(md):
    """scripts/stack status reads stats --json at any moment: what the owner saw still counts."""
    md.call({"action": "add", "file": "memory", "text": OLD})
    md.call({"action": "add", "file": "memory", "text": KEEP})
    assert f"memory.md:1: {OLD}" in _stats(md)
    md.call({"action": "remove", "file": "memory", "old": OLD})
    read = json.loads(md.admin("stats", {"json": True, "shown": False}))
    assert read["files"]["memory.md"]["entries"][0]["entry"] == KEEP
    with pytest.raises(AdminRefused):
        md.admin("forget", {"id": "memory.md:1"})
    assert KEEP in md.home.memory_file("memory.md").read_text()
