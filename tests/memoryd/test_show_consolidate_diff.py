"""bxctl memory show of a consolidate: every entry of before and of after is in show's changes
exactly once (text and --json), and an entry that went to notes.md is said moved or dropped. A
consolidate that moves an entry and rewrites a later one must show the text really written (it is
in every new session's prompt), not hide it and show another entry twice."""

import json
import random
from collections import Counter

import pytest

from memoryd.journal import scan
from memoryd.journal.journal import EditLine, NoteLine
from memoryd.owner import show
from tests.memoryd.owner_data_harness import Memoryd

EDIT = "2026-12-06-0001"
# Each old entry's fate in a consolidate: keep, move or drop to notes.md, rewrite, remove.
FATES = ("keep", "move", "drop", "rewrite", "remove")


def _old(i: int) -> str:
    return f"Old entry {i:02d}."


def _consolidate(plan: list[str | None]) -> EditLine:
    """The journal line of a consolidate of memory.md: plan gives each old entry's fate in
    order, and None a new entry written at that place."""
    before, after, notes = [], [], []
    for step, fate in enumerate(plan):
        if fate is None:
            after.append(f"New entry {step:02d}.")
            continue
        old = _old(len(before))
        before.append(old)
        if fate == "keep":
            after.append(old)
        elif fate == "rewrite":
            after.append(f"Rewritten entry {step:02d}.")
        elif fate in ("move", "drop"):
            notes.append(NoteLine(kind="moved" if fate == "move" else "dropped", text=old))
    return EditLine(
        id=EDIT,
        session="s1",
        action="consolidate",
        file="memory.md",
        to="memory.md",
        before=before,
        after=after,
        notes=notes,
    )


def _check_changes(record: EditLine, changes: list[dict]) -> None:
    """Every entry of before and of after exactly once; moved and dropped ones said so."""
    olds, news, went = Counter(), Counter(), Counter()
    for c in changes:
        kind = c["change"]
        if kind == "kept":
            olds[c["entry"]] += 1
            news[c["entry"]] += 1
        elif kind == "rewritten":
            olds[c["old"]] += 1
            news[c["new"]] += 1
        elif kind == "added":
            news[c["entry"]] += 1
        else:
            assert kind in ("removed", "moved", "dropped"), c
            olds[c["entry"]] += 1
            if kind != "removed":
                went[(kind, c["entry"])] += 1
                assert c["to"] == "notes.md"
    assert olds == Counter(record.before), changes
    assert news == Counter(record.after), changes
    assert went == Counter((n.kind, n.text) for n in record.notes), changes


TEXT_KINDS = {"! rewritten": "old", "  now": "new", "+ added": "new", "- removed": "old"}
TEXT_KINDS |= {"^ moved": "old", "x dropped": "old"}


def _check_text(record: EditLine, text: str, kept: list[str]) -> None:
    """The text form: every entry not kept on its own line once, and the kept ones (as the
    diff gives them) counted."""
    olds, news = Counter(kept), Counter(kept)
    lines = text.splitlines()
    head = f"entries   {len(record.before)} before, {len(record.after)} after"
    for line in lines[lines.index(head) + 1 :]:
        mark, entry = line[: len(show.INDENT)].rstrip(), line[len(show.INDENT) :]
        if mark in TEXT_KINDS:
            (olds if TEXT_KINDS[mark] == "old" else news)[entry] += 1
            if mark in ("^ moved", "x dropped"):
                assert (mark[2:], entry) in {(n.kind, n.text) for n in record.notes}
        elif line.startswith("= "):
            assert line == f"= {len(kept)} entr{'y' if len(kept) == 1 else 'ies'} unchanged"
        else:
            assert line in (show.INDENT + "(to notes.md)", "(no entry changed)"), line
    assert olds == Counter(record.before), text
    assert news == Counter(record.after), text


def _kept(changes: list[dict]) -> list[str]:
    return [c["entry"] for c in changes if c["change"] == "kept"]


def _check(record: EditLine) -> None:
    changes = show.diff(record)
    _check_changes(record, changes)
    _check_text(record, show.render(record, changes), _kept(changes))


CASES = {
    "move then rewrite then new": ["keep", "move", "rewrite", None, "keep"],
    "move and rewrite twice over": ["move", "rewrite", "move", "rewrite"],
    "drop then rewrite": ["drop", "rewrite", "keep"],
    "move then rewrite, no new": ["keep", "move", "rewrite", "keep"],
    "rewrite then move": ["rewrite", "move", "keep"],
    "move only": ["keep", "move", "keep"],
    "everything moved, new written": ["move", "drop", "move", None, None],
    "two moves before one rewrite": ["move", "move", "rewrite", None],
    "rewrite and remove": ["rewrite", "remove", "keep"],
    "new in place of a moved entry": ["keep", "move", None, "keep"],
    "moved after new entries": [None, None, "move", "rewrite"],
    "nothing changed": ["keep", "keep"],
    "empty before": [None, None],
}


@pytest.mark.parametrize("plan", CASES.values(), ids=CASES.keys())
def test_every_entry_of_a_consolidate_is_shown_once(plan):
    _check(_consolidate(plan))


def test_the_text_really_written_is_shown_beside_a_moved_entry():
    changes = show.diff(_consolidate(["keep", "move", "rewrite", None, "keep"]))
    assert [c["change"] for c in changes] == ["kept", "moved", "rewritten", "added", "kept"]
    assert changes[2] == {
        "change": "rewritten",
        "old": _old(2),
        "new": "Rewritten entry 02.",
    }
    assert changes[3] == {"change": "added", "entry": "New entry 03."}


def test_a_text_held_twice_and_moved_once_is_said_moved_once():
    record = EditLine(
        id=EDIT,
        action="consolidate",
        file="memory.md",
        to="memory.md",
        before=["Twice.", "Other.", "Twice."],
        after=["Twice.", "Other, rewritten."],
        notes=[NoteLine(kind="moved", text="Twice.")],
    )
    _check(record)
    kinds = Counter(c["change"] for c in show.diff(record))
    assert kinds == Counter({"kept": 1, "rewritten": 1, "moved": 1})


@pytest.mark.parametrize("seed", [25, 2026, 90210])
def test_random_consolidates_show_every_entry_once(seed):
    rng = random.Random(seed)
    for _ in range(2_000):
        plan: list[str | None] = [rng.choice(FATES) for _ in range(rng.randint(0, 9))]
        for _ in range(rng.randint(0, 3)):
            plan.insert(rng.randint(0, len(plan)), None)
        _check(_consolidate(plan))


def test_show_of_a_real_consolidate_lists_the_rewritten_text(tmp_path):
    md = Memoryd(tmp_path / "home")
    try:
        for text in ("Alpha entry.", "Moved entry.", "Rewritten entry.", "Beta entry."):
            md.call({"action": "add", "file": "memory", "text": text})
        entries = [
            {"old": "Alpha entry.", "keep": True},
            {"old": "Moved entry.", "move": True},
            {"old": "Rewritten entry.", "text": "NEW ONE: the rewritten text."},
            {"text": "NEW TWO: a brand new entry."},
            {"old": "Beta entry.", "keep": True},
        ]
        md.call({"action": "consolidate", "file": "memory", "entries": entries})
        assert "NEW ONE: the rewritten text." in md.home.memory_file("memory.md").read_text()
        record = scan.tail(md.store.journal.month_files(), 1)[0]
        assert record.action == "consolidate"
        text = md.admin("show", {"id": record.id})
        assert text.count("NEW ONE: the rewritten text.") == 1
        assert text.count("NEW TWO: a brand new entry.") == 1
        answer = json.loads(md.admin("show", {"id": record.id, "json": True}))
        _check_changes(record, answer["changes"])
        _check_text(record, text, _kept(answer["changes"]))
        assert {"change": "moved", "entry": "Moved entry.", "to": "notes.md"} in answer["changes"]
    finally:
        md.close()
