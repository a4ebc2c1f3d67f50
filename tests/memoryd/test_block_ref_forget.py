"""bxctl memory block prints each entry it leaves out under the ref forget takes (memory.md:N).
forget takes that ref as naming the entry printed beside it, by whichever command (stats or block)
printed the number last: a write since block's print (a session's remove, a hand edit) moves the
numbers, and forget, which cannot be undone, must never erase the good entry that moved into N's
place."""

import json

import pytest

from memoryd.errors import AdminRefused
from memoryd.memory import shown
from tests.memoryd.owner_data_harness import Memoryd

A, B, C = "Owner likes tea.", "Owner lives in Lyon.", "Owner's sister is Robin."
BAD = "Bad entry \u202eevil\u202c by hand."  # the check leaves it out of the block
BAD_TOO = "Another \u202ebad\u202c one by hand."


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def _add(md: Memoryd, *texts: str) -> None:
    for text in texts:
        md.call({"action": "add", "file": "memory", "text": text})


def _by_hand(md: Memoryd, *texts: str) -> None:
    path = md.home.memory_file("memory.md")
    held = path.read_text().rstrip("\n")
    path.write_text("\n§\n".join([held, *texts] if held else list(texts)) + "\n")


def _held(md: Memoryd) -> str:
    return md.home.memory_file("memory.md").read_text()


def _block_refs(md: Memoryd) -> dict[str, str]:
    """The refs block printed, as the owner reads them: ref -> the entry under it."""
    lines = md.admin("block", {"json": False}).splitlines()
    part = lines[lines.index("-- left out of the block --") : lines.index("-- sizes --")]
    return {
        line.split(": ", 1)[0]: part[n + 1].strip()
        for n, line in enumerate(part)
        if line.startswith("memory.md:")
    }


def _stats_then_session_moves_then_hand_entry(md: Memoryd) -> None:
    """stats prints A, B, C as 1 to 3; a session removes A; the owner adds BAD by hand at 3."""
    _add(md, A, B, C)
    md.admin("stats", {"days": 30})
    md.call({"action": "remove", "file": "memory", "old": A})
    _by_hand(md, BAD)


def test_a_block_ref_after_a_write_since_stats_forgets_the_entry_block_showed(md):
    _stats_then_session_moves_then_hand_entry(md)
    assert _block_refs(md) == {"memory.md:3": BAD}
    md.admin("forget", {"id": "memory.md:3"})
    assert _held(md) == f"{B}\n§\n{C}\n"


def test_numbers_block_did_not_print_keep_what_stats_printed(md):
    _stats_then_session_moves_then_hand_entry(md)
    _block_refs(md)
    preview = md.data("forget", id="memory.md:2", dry_run=True)  # stats printed B there
    assert preview["texts"] == [B]
    assert "the one stats printed there, entry 1 now" in preview["what"]
    with pytest.raises(AdminRefused) as refused:  # stats printed A there, removed since
        md.admin("forget", {"id": "memory.md:1"})
    assert "no longer holds the entry bxctl memory stats printed as memory.md:1" in str(
        refused.value
    )
    assert _held(md) == f"{B}\n§\n{C}\n§\n{BAD}\n"


def test_a_write_after_block_moves_its_entry_and_forget_still_takes_it(md):
    _add(md, A, B)
    _by_hand(md, BAD)
    assert _block_refs(md) == {"memory.md:3": BAD}
    md.call({"action": "remove", "file": "memory", "old": A})  # BAD is entry 2 now
    _by_hand(md, C)  # and C stands at 3
    preview = md.data("forget", id="memory.md:3", dry_run=True)
    assert preview["texts"] == [BAD]
    assert "the one block printed there, entry 2 now" in preview["what"]
    md.admin("forget", {"id": "memory.md:3"})
    assert _held(md) == f"{B}\n§\n{C}\n"


def test_a_block_ref_whose_entry_went_since_is_refused_naming_block(md):
    _add(md, A)
    _by_hand(md, BAD)
    assert _block_refs(md) == {"memory.md:2": BAD}
    md.home.memory_file("memory.md").write_text(f"{A}\n§\n{C}\n")  # BAD mended by hand
    with pytest.raises(AdminRefused) as refused:
        md.admin("forget", {"id": "memory.md:2"})
    said = str(refused.value)
    assert "no longer holds the entry bxctl memory block printed as memory.md:2" in said
    assert "\n" not in said
    assert _held(md) == f"{A}\n§\n{C}\n"


def test_after_a_block_alone_a_number_it_did_not_print_is_refused(md):
    _add(md, A, B)
    _by_hand(md, BAD)
    _block_refs(md)  # no stats: block printed memory.md:3 only
    md.call({"action": "remove", "file": "memory", "old": A})
    with pytest.raises(AdminRefused) as refused:
        md.admin("forget", {"id": "memory.md:1"})
    said = str(refused.value)
    assert "bxctl memory block printed no memory.md:1 and no stats printed memory.md" in said
    assert "run bxctl memory stats" in said
    assert _held(md) == f"{B}\n§\n{BAD}\n"
    assert shown.printed(md.index, "user.md") is None  # block printed nothing of user.md


def test_block_json_refs_count_as_printed(md):
    _stats_then_session_moves_then_hand_entry(md)
    answer = json.loads(md.admin("block", {"json": True}))
    assert [(i["ref"], i["entry"]) for i in answer["left_out"]] == [("memory.md:3", BAD)]
    assert md.data("forget", id="memory.md:3", dry_run=True)["texts"] == [BAD]


def test_a_stats_after_block_prints_every_number_again(md):
    _add(md, A)
    _by_hand(md, BAD, BAD_TOO)
    assert _block_refs(md) == {"memory.md:2": BAD, "memory.md:3": BAD_TOO}
    md.call({"action": "remove", "file": "memory", "old": A})
    assert f"memory.md:1: {BAD}" in md.admin("stats", {"days": 30})
    assert md.data("forget", id="memory.md:1", dry_run=True)["texts"] == [BAD]
    assert md.data("forget", id="memory.md:2", dry_run=True)["texts"] == [BAD_TOO]


def test_what_block_printed_counts_across_a_restart(tmp_path):
    first = Memoryd(tmp_path / "home")
    _add(first, A, B)
    _by_hand(first, BAD)
    assert _block_refs(first) == {"memory.md:3": BAD}
    first.close()
    again = Memoryd(tmp_path / "home")
    try:
        again.call({"action": "remove", "file": "memory", "old": A})
        _by_hand(again, C)
        assert again.data("forget", id="memory.md:3", dry_run=True)["texts"] == [BAD]
        again.admin("forget", {"id": "memory.md:3"})
        assert _held(again) == f"{B}\n§\n{C}\n"
        assert BAD not in (again.home.index_dir / shown.NAME).read_text()
        assert [p.name for p in again.home.index_dir.iterdir() if p.name.endswith(".tmp")] == []
    finally:
        again.close()


def test_a_forget_between_blocks_read_and_its_save_is_not_undone(md, monkeypatch):
    _add(md, A)
    _by_hand(md, BAD)
    real = shown.print_refs
    forgot: list[str] = []

    def print_refs(holder, file, numbered):
        if not forgot:  # block read the files; the forget lands before its save
            forgot.append(md.data("forget", id=BAD)["message"])
        real(holder, file, numbered)

    monkeypatch.setattr(shown, "print_refs", print_refs)
    assert "memory.md:2: " in md.admin("block", {"json": False})
    monkeypatch.setattr(shown, "print_refs", real)
    assert forgot and forgot[0].startswith("forgot ")
    assert BAD not in (md.home.index_dir / shown.NAME).read_text()
    assert BAD not in json.dumps(shown.printed(md.index, "memory.md"))
    _by_hand(md, C)  # C stands at 2 now: the number block printed names nothing held
    with pytest.raises(AdminRefused) as refused:
        md.admin("forget", {"id": "memory.md:2"})
    assert "no longer holds the entry bxctl memory block printed as memory.md:2" in str(
        refused.value
    )
    assert _held(md) == f"{A}\n§\n{C}\n"


def test_a_block_beside_a_damaged_saved_print_keeps_it_damaged(tmp_path):
    """What the damaged print held of other numbers is not known: block's refs are taken, the
    rest stay refused until stats prints again, and the damaged file is not saved over."""
    first = Memoryd(tmp_path / "home")
    _add(first, A, B)
    first.call({"action": "add", "file": "user", "text": C})
    first.admin("stats", {"days": 30})
    first.close()
    saved = tmp_path / "home" / "index" / shown.NAME
    saved.write_text("{not json")
    again = Memoryd(tmp_path / "home")
    try:
        _by_hand(again, BAD)
        assert _block_refs(again) == {"memory.md:3": BAD}
        assert saved.read_text() == "{not json"
        assert again.data("forget", id="memory.md:3", dry_run=True)["texts"] == [BAD]
        for ref in ("memory.md:1", "user.md:1"):
            with pytest.raises(AdminRefused):
                again.data("forget", id=ref, dry_run=True)
        assert _held(again) == f"{A}\n§\n{B}\n§\n{BAD}\n"
    finally:
        again.close()
