"""A save of the owner's that memoryd kept beside memory.md (memory.md.hand-edit-<time>: one that
landed while memoryd swapped its write in, or one a kill left under its temporary name) is in
forget's reach: the text forgotten leaves it too, and the answer counts it."""

import pytest

from tests.memoryd.owner_data_harness import Memoryd

SECRET = "The safe's code is 90210."


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


@pytest.mark.parametrize(
    "name", ["memory.md.hand-edit-20261203T210314Z", "user.md.hand-edit-1a2b3c4d"]
)
def test_a_forgotten_text_leaves_the_kept_saves_too(md, name):
    md.call({"action": "add", "file": "memory", "text": SECRET})
    kept = md.home.memory_file(name)
    kept.write_text(f"Keep this line.\n§\n{SECRET}\n")
    alone = md.home.memory_file("user.md.hand-edit-20261203T210315Z")
    alone.write_text(f"{SECRET}\n")
    out = md.data("forget", id=SECRET)
    assert "2 kept hand edits" in out["message"], out["message"]
    assert SECRET not in kept.read_text() and "Keep this line." in kept.read_text()
    assert not alone.exists()  # nothing of it was left
    held = b"".join(p.read_bytes() for p in md.home.memory.iterdir() if p.is_file())
    assert SECRET.encode() not in held
