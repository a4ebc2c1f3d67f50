"""A journal line cut short by a power cut, or a journal month lost, never turns a secret entry into
the owner's hand edit: seen from outside, memoryd as a process, a secret session's add sent on the
broker socket as brokerd sends it, the owner's commands on the admin socket as bxctl sends them.

memoryd cannot tell such an entry from the owner's hand edit, so it journals the hand edit with
the entries' class unknown (taken as the highest): the block leaves them out while max_class is
below it, and says why and how the owner keeps one (his own edit of it). A hand edit with the
journal whole is the owner's, private, as before.
"""

import hashlib
import itertools
import json
from pathlib import Path

import pytest

from memoryd.home import Home
from memoryd.journal.journal import Journal
from memoryd.memory import handclass
from proto.client import request
from proto.messages import (
    MemoryAdmin,
    MemoryAdminReply,
    MemoryBlock,
    MemoryBlockReply,
    MemoryCall,
    ToolRequest,
    ToolResponse,
)
from tests.memoryd_process import MemorydProcess

SECRET = "Secret: the vault code is 77-31-05"
CLEAN = "Clean fact one"
OWNERS = "The owner's own fact, typed into memory.md"
_calls = itertools.count(1)


class Box:
    def __init__(self, tmp_path: Path, max_class: str):
        self.proc = MemorydProcess(tmp_path, f'[index]\nmax_class = "{max_class}"\n')
        self.memory = self.proc.home / "memory" / "memory.md"

    def set_max_class(self, max_class: str) -> None:
        text = self.proc.config.read_text()
        self.proc.config.write_text(
            text[: text.index("max_class")] + f'max_class = "{max_class}"\n'
        )

    def add(self, text: str, session: str, taint: str) -> str:
        call = ToolRequest(
            session=session,
            call_id=f"c{next(_calls)}",
            tool="memory",
            arguments=json.dumps({"action": "add", "file": "memory", "text": text}),
        )
        message = MemoryCall(request=call, taint=taint, untrusted=False)
        return request(self.proc.broker_socket, message, 60, reply=ToolResponse).output

    def block(self) -> str:
        return request(self.proc.loop_socket, MemoryBlock(), 30, reply=MemoryBlockReply).text

    def admin(self, command: str, arg: str = "") -> str:
        message = MemoryAdmin(command=command, arg=arg)
        return request(self.proc.admin_socket, message, 60, reply=MemoryAdminReply).text

    def owner_edit(self, text: str) -> str:
        """bxctl memory edit memory, the copy saved as text."""
        base = hashlib.sha256(self.memory.read_bytes()).hexdigest()
        return self.admin("edit", json.dumps({"file": "memory", "text": text, "base": base}))

    def journal(self) -> Path:
        (month,) = sorted((self.proc.home / "memory" / "edits").glob("*.jsonl"))
        return month

    def lines(self) -> list[dict]:
        """The journal's whole lines (a torn one passed over)."""
        out = []
        for raw in self.journal().read_text().splitlines():
            try:
                out.append(json.loads(raw))
            except ValueError:
                continue
        return out

    def logged(self) -> str:
        return self.proc.log.read_text()


@pytest.fixture
def box(tmp_path):
    """memoryd with a clean entry and a secret session's entry in memory.md (max_class secret
    then), stopped, max_class lowered to private."""
    b = Box(tmp_path, "secret")
    try:
        b.proc.start()
        assert "updated" in b.add(CLEAN, "mm-a", "private")
        assert "updated" in b.add(SECRET, "mm-s", "secret")
        b.proc.stop()
        b.set_max_class("private")
        b.proc.start()
        assert SECRET not in b.block()  # left out while its journal line is whole
        b.proc.stop()
        yield b
    finally:
        b.proc.kill()


def test_a_torn_line_leaves_the_entry_it_brought_in_out_of_the_block(box):
    raw = box.journal().read_text().splitlines(True)
    assert '"taint": "secret"' in raw[-1]
    box.journal().write_text("".join(raw[:-1]) + raw[-1][:60])  # a power cut in its append
    box.proc.start()

    assert SECRET not in box.block()
    assert CLEAN in box.block()
    hand = box.lines()[-1]
    assert hand["action"] == "hand-edit" and hand["after"] == [CLEAN, SECRET]
    assert hand["carried"] == handclass.UNKNOWN
    said = [line for line in box.logged().splitlines() if "edited outside memoryd" in line][-1]
    assert "the journal of memory.md is not whole after its last line (line 2 of " in said
    assert "is damaged)" in said and "bxctl memory edit memory" in said
    assert said.endswith("(runbook: journal-damaged)")

    shown = box.admin("block", "{}")
    assert "memory.md:2: its class is unknown (the journal line that brought it in" in shown
    assert "taken as secret, above what memory may hold (private)" in shown

    # The owner's own edit of it brings it in as his: private, in the block.
    kept = "Vault code is 77-31-05 (the owner keeps it)"
    box.owner_edit(f"{CLEAN}\n§\n{kept}\n")
    assert kept in box.block()


def test_the_torn_line_deleted_as_the_runbook_says_keeps_it_out(box):
    """The runbook's step for a line cut short, taken before memoryd starts again: the journal
    holds no line of an edit memoryd handed out."""
    raw = box.journal().read_text().splitlines(True)
    box.journal().write_text("".join(raw[:-1]))
    box.proc.start()
    assert SECRET not in box.block()
    said = [line for line in box.logged().splitlines() if "edited outside memoryd" in line][-1]
    assert "has left it)" in said and said.endswith("(runbook: journal-lost)")


def test_a_lost_month_leaves_its_entries_out_of_the_block(box):
    box.journal().unlink()
    box.proc.start()
    block = box.block()
    assert SECRET not in block
    hand = box.lines()[-1]
    assert hand["action"] == "hand-edit" and hand["carried"] == handclass.UNKNOWN
    said = [line for line in box.logged().splitlines() if "edited outside memoryd" in line][-1]
    assert "the 2 entries it brings in" in said and said.endswith("(runbook: journal-lost)")


def test_a_hand_edit_with_the_journal_whole_is_the_owners(box):
    box.memory.write_text(box.memory.read_text().rstrip("\n") + f"\n§\n{OWNERS}\n")
    box.proc.start()
    block = box.block()
    assert OWNERS in block and CLEAN in block and SECRET not in block
    hand = box.lines()[-1]
    assert hand["action"] == "hand-edit" and "carried" not in hand
    said = [line for line in box.logged().splitlines() if "edited outside memoryd" in line][-1]
    assert "not whole" not in said


def _line(edit_id: str, to: str | None, before: list[str], after: list[str], **more) -> str:
    record = {"id": edit_id, "time": "2026-12-06T04:00:00Z", "session": "mm-a", "call": "c1"}
    record |= {"taint": "private", "untrusted": False, "action": "add", "file": None, "to": to}
    record |= {"before": before, "after": after, "notes": [], **more}
    return json.dumps(record) + "\n"


@pytest.mark.parametrize(
    ("tail", "why"),
    [
        ("", None),  # whole
        (_line("2026-12-06-0002", "notes.md", [], [])[:190], None),  # another file's line
        (_line("2026-12-06-0002", "memory.md", ["a"], ["a", "b"])[:100], "line 2 of 2026-12.jsonl"),
        ('{"id": "2026-12-06-00', "line 2 of 2026-12.jsonl"),  # its file unknown
        (
            _line("2026-12-06-0002", "notes.md", [], []).split('notes.md"')[0] + "notes.m",
            "line 2 of 2026-12.jsonl",
        ),  # cut inside the name: its file unknown
    ],
)
def test_which_damaged_lines_make_the_journal_not_whole(tmp_path, tail, why):
    home = Home(tmp_path / "home")
    home.edits.mkdir(parents=True)
    (home.edits / "2026-12.jsonl").write_text(
        _line("2026-12-06-0001", "memory.md", [], ["a"]) + tail
    )
    found = handclass.why_not_whole(Journal(home), "memory.md", "2026-12-06-0001")
    if why is None:
        assert found is None
    else:
        assert found is not None and found.why.startswith(why)


def test_a_damaged_line_before_the_files_latest_line_does_not_count(tmp_path):
    home = Home(tmp_path / "home")
    home.edits.mkdir(parents=True)
    lines = [
        _line("2026-12-06-0001", "memory.md", [], ["a"])[:50] + "\n",
        _line("2026-12-06-0002", "memory.md", [], ["a"]),
    ]
    (home.edits / "2026-12.jsonl").write_text("".join(lines))
    assert handclass.why_not_whole(Journal(home), "memory.md", "2026-12-06-0002") is None


def test_a_restore_after_a_damaged_line_makes_the_journal_whole_again(tmp_path):
    """A restore replaced the files whole: what a damaged line before it wrote is gone."""
    home = Home(tmp_path / "home")
    home.edits.mkdir(parents=True)
    lines = [
        _line("2026-12-06-0001", "memory.md", [], ["a"]),
        _line("2026-12-06-0002", "memory.md", ["a"], ["a", "b"])[:100] + "\n",
        _line("2026-12-06-0003", None, [], [], action="restore", restored={}),
    ]
    (home.edits / "2026-12.jsonl").write_text("".join(lines))
    assert handclass.why_not_whole(Journal(home), "memory.md", "2026-12-06-0001") is None
    (home.edits / "2026-12.jsonl").write_text("".join(lines[:2]))
    assert handclass.why_not_whole(Journal(home), "memory.md", "2026-12-06-0001") is not None
