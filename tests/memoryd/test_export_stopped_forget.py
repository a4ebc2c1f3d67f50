"""While a forget that stopped part way stands, an export (what the owner carries to another
home, out of reach of the forget's re-run) leaves out what it takes, as search does, and says so
with the command that finishes it; a backup is made all the same, and says that it may hold that
text. Neither answer nor log line holds the text of a forget given by its words."""

import errno
import json
import logging
from pathlib import Path

import pytest

from memoryd.data import erasing, forget, unfinished
from memoryd.errors import AdminRefused
from tests.memoryd.owner_data_harness import Memoryd

ENTRIES = ["The build server is called anvil.", "Backups run nightly at 02:30 to the NAS."]
NOTES = ["The router is in the hall.", "Vault combination is 73-19-44."]
# the id (or words) forgotten, and its text
CASES = {
    "note": ("note:1", NOTES[1]),
    "entry": ("memory.md:2", ENTRIES[1]),
    "entry by its words": (ENTRIES[1], ENTRIES[1]),
}


def _home(tmp_path: Path) -> Memoryd:
    m = Memoryd(tmp_path / "home")
    for entry in ENTRIES:
        m.call({"action": "add", "file": "memory", "text": entry})
    for note in NOTES:
        m.call({"action": "note", "text": note})
    return m


def _stop_before_first_write(m: Memoryd, monkeypatch, ref: str) -> None:
    """The forget records what it takes, then the disk fails on its first write: the files
    still hold the text (the state a kill at that point leaves)."""

    def disk_fails(*_args, **_kwargs):
        raise OSError(errno.EIO, "Input/output error", str(m.home.memory_file("notes.md")))

    with monkeypatch.context() as patched:
        patched.setattr(forget, "_first_changes", disk_fails)
        with pytest.raises(AdminRefused, match="stopped part way"):
            m.admin("forget", {"id": ref})
    assert unfinished.read(m.home) is not None


def _exported(m: Memoryd, fmt: str) -> tuple[dict, str]:
    made = m.data("export", format=fmt)
    return made, Path(made["path"]).read_text()


@pytest.mark.parametrize("case", list(CASES))
def test_an_export_leaves_out_what_a_stopped_forget_takes_and_says_so(
    tmp_path, monkeypatch, caplog, case
):
    ref, text = CASES[case]
    m = _home(tmp_path)
    try:
        _stop_before_first_write(m, monkeypatch, ref)
        assert (
            text
            in m.home.memory_file("notes.md").read_text()
            + m.home.memory_file("memory.md").read_text()
        )
        caplog.set_level(logging.INFO)
        for fmt in ("jsonl", "markdown"):
            made, held = _exported(m, fmt)
            assert text not in held
            assert all(t in held for t in ENTRIES + NOTES if t != text)
            said = made["forget_stopped"]
            left = "1 note" if ref.startswith("note:") else "1 entry"
            assert (
                f"stopped part way: left out of this export, as search leaves it out: {left}"
                in said
            )
            assert said in made["message"] and text not in made["message"]
            if ref != text:
                assert f"bxctl memory forget {ref} again to finish it" in said
            else:
                assert "bxctl memory stats names it) again to finish it" in said
            if fmt == "jsonl":
                kinds = [json.loads(line)["kind"] for line in held.splitlines()[1:]]
                assert len(kinds) == 3
        backed = m.data("backup")
        assert Path(backed["path"]).exists()
        assert "this archive may still hold its text" in backed["message"]
        assert backed["forget_stopped"] in backed["message"] and text not in backed["message"]
        warned = [r.getMessage() for r in caplog.records if "stopped part way" in r.getMessage()]
        assert len(warned) == 3 and not any(text in line for line in warned)
        m.admin("forget", {"id": ref})  # finished: the exports say nothing more of it
        made, held = _exported(m, "jsonl")
        assert made["forget_stopped"] is None and "stopped" not in made["message"]
        assert text not in held
        assert m.data("backup")["forget_stopped"] is None
    finally:
        m.close()


class Killed(Exception):
    """memoryd killed: nothing after it runs."""


def test_a_forget_stopped_after_it_rewrote_the_files_is_said_though_nothing_is_left_out(
    tmp_path, monkeypatch
):
    m = _home(tmp_path)
    try:

        def killed(*_args, **_kwargs):
            raise Killed

        with monkeypatch.context() as patched:
            patched.setattr(erasing, "scrub_everywhere", killed)  # after the files
            with pytest.raises(Killed):
                m.admin("forget", {"id": "note:1"})
        made, held = _exported(m, "jsonl")
        assert NOTES[1] not in held and NOTES[0] in held
        assert "no longer hold its text, so neither does this export" in made["message"]
        assert "run bxctl memory forget note:1 again" in made["message"]
    finally:
        m.close()


def test_with_a_stopped_forget_whose_record_cannot_be_read_export_is_refused_backup_made(
    tmp_path,
):
    m = _home(tmp_path)
    try:
        record = unfinished.path_of(m.home)
        record.write_text("not json")
        with pytest.raises(AdminRefused, match="refused: nothing was exported: .*cannot be read"):
            m.data("export")
        assert not list((m.home.root / "backups").glob("export-*"))
        backed = m.data("backup")
        assert Path(backed["path"]).exists()
        assert str(record) in backed["message"]
        assert "this archive may still hold its text" in backed["message"]
        record.unlink()
    finally:
        m.close()


def test_bxctl_says_the_stopped_forget_on_stderr_beside_the_export_it_prints(capsys, tmp_path):
    from bxctl import owner_data

    said = "a forget of note:1 stopped part way: run bxctl memory forget note:1 again"
    owner_data._say_stopped({"forget_stopped": said}, tmp_path)
    owner_data._say_stopped({"forget_stopped": None}, tmp_path)
    out = capsys.readouterr()
    assert out.out == "" and out.err == said + "\n"
