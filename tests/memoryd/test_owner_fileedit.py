"""bxctl memory edit's two commands, file and edit, on a memory file that is not a regular file or
is too long: refused at once in one line, never followed, waited on or read without end."""

import hashlib
import json
import os
import threading
import unicodedata

import pytest

from memoryd.errors import MemorydError
from memoryd.memory import entries
from memoryd.owner.fileedit import READ_MAX
from tests.memoryd.store_helpers import fill, memory_path, new_store, owner


def _fifo(path):
    path.unlink()
    os.mkfifo(path)


def _zero(path):
    path.unlink()
    path.symlink_to("/dev/zero")


def _link(path):
    outside = path.parent.parent / "elsewhere.md"
    outside.write_text("kept\n")
    path.unlink()
    path.symlink_to(outside)


def _long(path):
    path.write_bytes(b"x" * (READ_MAX + 1))


@pytest.mark.parametrize(
    ("spoil", "said"),
    [
        (_fifo, "memory.md is a FIFO, not a regular file; nothing was read"),
        (_zero, "memory.md is a symbolic link, which is not followed; nothing was read"),
        (_link, "memory.md is a symbolic link, which is not followed; nothing was read"),
        (_long, f"memory.md is larger than {READ_MAX:,} bytes"),
    ],
)
def test_file_and_edit_refuse_a_memory_md_that_is_not_a_plain_short_file(tmp_path, spoil, said):
    store = new_store(tmp_path)
    fill(store, "memory", ["kept"])
    base = hashlib.sha256(b"kept\n").hexdigest()
    spoil(memory_path(store, "memory.md"))
    answers: list = []

    def ask() -> None:  # a FIFO must not hold the reader: run it where a hang shows
        for command, arg in (
            ("file", {"file": "memory", "json": True}),
            ("edit", {"file": "memory", "text": "changed\n", "base": base}),
        ):
            try:
                answers.append(owner(store, command, arg))
            except MemorydError as e:
                answers.append(e)

    reader = threading.Thread(target=ask, daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # let the blocked open go before failing
        os.close(os.open(memory_path(store, "memory.md"), os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("the reader waited on memory.md")
    file_answer, edit_answer = answers
    assert isinstance(file_answer, MemorydError), file_answer
    assert str(file_answer).startswith("refused: ") and said in str(file_answer)
    # edit refuses too (the store reads the file first, as for every edit), in one line
    assert isinstance(edit_answer, MemorydError), edit_answer
    assert "memory.md" in str(edit_answer)
    for answer in answers:
        assert "\n" not in str(answer)
    assert memory_path(store, "memory.md").is_symlink() or spoil is not _link


def test_a_file_at_the_limit_is_handed_over(tmp_path):
    store = new_store(tmp_path)
    fill(store, "memory", ["kept"])
    memory_path(store, "memory.md").write_bytes(b"y" * READ_MAX)

    answer = json.loads(owner(store, "file", {"file": "memory", "json": True}))
    assert answer["text"] == "y" * READ_MAX
    assert answer["base"] == hashlib.sha256(b"y" * READ_MAX).hexdigest()


def test_edit_reads_a_copy_saved_with_a_bom_and_crlf_as_the_file_is_read(tmp_path):
    """An editor that saves with a byte order mark and CRLF line ends: the copy gives the entries
    those same bytes give in user.md itself, not a rule 2 (the BOM) or rule 1 (a CR) refusal."""
    store = new_store(tmp_path)
    fill(store, "user", ["Owner likes tea."])
    base = json.loads(owner(store, "file", {"file": "user", "json": True}))["base"]
    saved = "\ufeffOwner likes tea.\r\n§\r\nOwner lives in Lyon;\r\nworks from home.\r\n"
    answer = owner(store, "edit", {"file": "user", "text": saved, "base": base})
    assert answer.startswith("edit ") and "user.md updated" in answer
    after = ["Owner likes tea.", "Owner lives in Lyon;\nworks from home."]
    assert entries.parse(memory_path(store, "user.md").read_text()) == after
    by_hand = entries.parse(entries.decode(saved.encode(), "user.md"))
    assert by_hand == after


def test_edit_of_a_bom_and_crlf_copy_of_the_same_entries_changes_nothing(tmp_path):
    store = new_store(tmp_path)
    fill(store, "user", ["a", "b\nc"])
    before = memory_path(store, "user.md").read_bytes()
    base = json.loads(owner(store, "file", {"file": "user", "json": True}))["base"]
    answer = owner(
        store, "edit", {"file": "user", "text": "\ufeffa\r\n§\r\nb\r\nc\r\n", "base": base}
    )
    assert answer == "user.md is unchanged: the copy holds the same entries"
    assert memory_path(store, "user.md").read_bytes() == before


def test_a_lone_cr_in_the_copy_is_a_line_end_as_in_the_file(tmp_path):
    """An editor set to classic Mac line ends: the copy gives the entries the same bytes give in
    user.md itself, a CR read as a line end, never a character of an entry."""
    store = new_store(tmp_path)
    base = json.loads(owner(store, "file", {"file": "user", "json": True}))["base"]
    saved = "a\rb\r§\rc\r"
    answer = owner(store, "edit", {"file": "user", "text": saved, "base": base})
    assert answer.startswith("edit ") and "user.md updated" in answer
    assert entries.parse(memory_path(store, "user.md").read_text()) == ["a\nb", "c"]
    assert entries.parse(entries.decode(saved.encode(), "user.md")) == ["a\nb", "c"]


def test_a_copy_holding_one_entry_in_both_normal_forms_is_refused_as_a_repeat(tmp_path):
    """The same entry composed (NFC) and decomposed (NFD) is one entry twice, as an add of it is
    refused; the file is left as it was."""
    store = new_store(tmp_path)
    fill(store, "user", ["Owner likes tea."])
    before = memory_path(store, "user.md").read_bytes()
    base = json.loads(owner(store, "file", {"file": "user", "json": True}))["base"]
    composed = "Owner lives in H\u00e0 N\u1ed9i."
    decomposed = unicodedata.normalize("NFD", composed)
    assert decomposed != composed
    with pytest.raises(MemorydError) as e:
        owner(
            store, "edit", {"file": "user", "text": f"{composed}\n§\n{decomposed}\n", "base": base}
        )
    assert "entry 2 repeats entry 1" in str(e.value)
    assert memory_path(store, "user.md").read_bytes() == before
