"""An edit id names the edit it named when the owner was shown it: an undo of an id no edit had
when asked never reverts a hand edit the same call journals under that id."""

import pytest

from memoryd.errors import AdminRefused
from tests.callargs import loose_call
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import CLEAN, args, journal_lines, memory_path, new_store

DAY = "2026-09-24"


def ids_listed(md: Memoryd) -> dict[str, str]:
    """bxctl memory log as the owner reads it: id -> the file the edit named."""
    listed = {}
    for line in md.admin("log").splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[0].startswith(DAY):
            listed[fields[0]] = fields[4]
    return listed


def two_adds(md: Memoryd) -> dict[str, str]:
    md.call({"action": "add", "file": "user", "text": "User zero."})
    md.call({"action": "add", "file": "memory", "text": "Mem two."})
    listed = ids_listed(md)
    assert listed == {f"{DAY}-0001": "user.md", f"{DAY}-0002": "memory.md"}
    return listed


def files(md: Memoryd) -> tuple[str, str]:
    return (
        md.home.memory_file("memory.md").read_text(),
        md.home.memory_file("user.md").read_text(),
    )


# --- a hand edit journalled in the same call --------------------------------------------------
@pytest.mark.parametrize("file", ["memory", "user"])
@pytest.mark.parametrize("ahead", [1, 2])
def test_undo_of_an_id_not_yet_given_never_reverts_the_hand_edit_it_finds(tmp_path, file, ahead):
    store = new_store(tmp_path)
    store.call(*loose_call(args(action="add", file="user", text="User zero."), **CLEAN))
    path = memory_path(store, f"{file}.md")
    with path.open("a") as f:
        f.write("§\nOwner typed this.\n" if path.read_text() else "Owner typed this.\n")
    by_hand = path.read_text()
    unknown = f"{DAY}-{1 + ahead:04d}"  # the id the hand edit would be journalled under, or after
    with pytest.raises(AdminRefused) as e:
        store.undo(unknown)
    assert str(e.value) == f"refused: the journal holds no edit {unknown}"
    assert path.read_text() == by_hand
    # The hand edit is journalled by the next write, and undone only when named by its own id.
    store.detect_hand_edits()
    hand = journal_lines(store)[-1]
    assert hand["action"] == "hand-edit" and hand["after"][-1] == "Owner typed this."
    assert "Owner typed this." in path.read_text()


def test_an_undo_of_a_listed_edit_sees_a_hand_edit_made_since_as_later(tmp_path):
    md = Memoryd(tmp_path / "home")
    try:
        listed = two_adds(md)
        (edit,) = [i for i, f in listed.items() if f == "memory.md"]
        md.home.memory_file("memory.md").write_text("Mem two.\n§\nBy hand.\n")
        with pytest.raises(AdminRefused, match="is not the latest edit of memory.md .the latest"):
            md.admin("undo", edit)
        assert "By hand." in files(md)[0]
    finally:
        md.close()
