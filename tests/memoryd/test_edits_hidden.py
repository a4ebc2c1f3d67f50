"""A session's edit planned from what its block shows (edits.plan's hidden), and a rewrite that
carries the class of what it rewrote through an owner's accept and into an export."""

import json
from pathlib import Path

import pytest

from memoryd.errors import EditRefused, FileInvalid
from memoryd.home import Home
from memoryd.memory import edits
from memoryd.memory.store import MemoryStore
from proto.tools import parse_memory
from tests.callargs import loose_call

from .owner_data_harness import Memoryd
from .store_helpers import CLEAN, SOUL_STARTER, Clock, args, last_line, owner

SECRET_SESSION = {"session": "mm-secret001", "call_id": "c9", "taint": "secret", "untrusted": False}
PIN = "Bank PIN is 4242."


def plan(action: dict, current: list[str], hidden: set[str]) -> edits.Plan:
    return edits.plan(parse_memory(json.dumps({"file": "memory", **action})), current, hidden)


def test_consolidate_leaves_what_is_hidden_in_its_place():
    current = ["a", PIN, "b", "c"]
    items = [
        {"old": "c", "keep": True},
        {"old": "a", "move": True},
        {"old": "b", "drop": True},
        {"text": "d"},
    ]
    done = plan({"action": "consolidate", "entries": items}, current, {PIN})
    assert done.after == ("c", PIN, "d")
    assert [r.text for r in done.removals] == ["a", "b"]


@pytest.mark.parametrize(
    "action",
    [
        {"action": "remove", "old": PIN},
        {"action": "replace", "old": PIN, "text": "x"},
        {"action": "remove", "old": "Bank  PIN is 4242."},  # its white space only differs
        {
            "action": "consolidate",
            "entries": [{"old": "a", "keep": True}, {"old": PIN, "keep": True}],
        },
    ],
)
def test_an_old_naming_only_a_hidden_entry_matches_nothing(action):
    with pytest.raises(EditRefused) as shown:
        plan(action, ["a", PIN], {PIN})
    old = action.get("old") or PIN
    assert str(shown.value) == edits.stale_sentence("memory.md", old, ())


def test_a_new_text_equal_to_a_hidden_entry_is_quoted_as_written():
    decomposed = "Cafe\u0301 opens at 8."
    held = "Caf\u00e9 opens at 8."
    with pytest.raises(EditRefused) as shown:
        plan(
            {
                "action": "consolidate",
                "entries": [{"old": "a", "keep": True}, {"text": decomposed}],
            },
            ["a", held],
            {held},
        )
    assert held not in str(shown.value) and decomposed in str(shown.value)


def test_a_hidden_entry_held_twice_is_named_by_place():
    with pytest.raises(FileInvalid) as shown:
        plan({"action": "add", "text": "x"}, ["a", PIN, "b", PIN], {PIN})
    assert str(shown.value) == (
        "refused: memory.md holds one entry twice (memory.md:2 and memory.md:4, edited by hand); "
        "the owner must fix the file before it can be edited"
    )
    with pytest.raises(FileInvalid) as shown:
        plan({"action": "add", "text": "x"}, ["a", "a"], set())
    assert '"a" twice' in str(shown.value)


def store_on(home: Home, max_class: str, review: bool = False) -> MemoryStore:
    store = MemoryStore(
        home, soul_starter=SOUL_STARTER, now=Clock(), max_class=max_class, review=review
    )
    store.ensure()
    return store


def test_an_accepted_rewrite_keeps_the_class_of_what_it_rewrote(tmp_path):
    home = Home(tmp_path / "home")
    store = store_on(home, "secret")
    store.call(*loose_call(args(action="add", file="memory", text=PIN), **SECRET_SESSION))
    review = store_on(home, "secret", review=True)
    said = review.call(
        *loose_call(args(action="replace", file="memory", old=PIN, text="PIN 4242"), **CLEAN)
    )
    pending = said.split("pending as ")[1].split(";")[0]
    assert owner(review, "accept", pending).startswith(f"accepted {pending}")
    assert last_line(review).carried == "secret"
    assert "4242" not in store_on(home, "private").block()


def test_an_export_gives_a_rewrite_the_class_it_carries(tmp_path):
    md = Memoryd(tmp_path / "home", max_class="secret")
    try:
        md.call({"action": "add", "file": "memory", "text": "Owner prefers UTC."})
        parsed, caller = loose_call(args(action="add", file="memory", text=PIN), **SECRET_SESSION)
        md.store.call(parsed, caller)
        md.call({"action": "replace", "file": "memory", "old": PIN, "text": "PIN 4242"})
        made = md.data("export", format="jsonl")
        lines = [json.loads(x) for x in Path(made["path"]).read_text().splitlines()]
        classes = {x["text"]: x["provenance"]["class"] for x in lines if x.get("kind") == "entry"}
        assert classes == {"Owner prefers UTC.": "private", "PIN 4242": "secret"}
    finally:
        md.close()
