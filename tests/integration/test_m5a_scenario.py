"""The M5a proofs (spec 1), as one scenario through the real sockets, run against the services as
processes and against the containers.

The model is played through the driver (loopd-shim start|say|answer), the owner through bxctl and
an editor (a file written by hand). Each step names the proof of spec 1 it shows.
"""

import importlib.util
import json
import re
from pathlib import Path

BENCH_TOKENS = Path(__file__).resolve().parents[2] / "bench" / "tokens.py"
_spec = importlib.util.spec_from_file_location("bench_tokens_scenario", BENCH_TOKENS)
tokens = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tokens)

EDIT_ID = re.compile(r"\b\d{4}-\d{2}-\d{2}-\d{4}\b")
CAT = "The owner's cat is called Miso."
TEA = "The owner drinks green tea in the morning."


def ok(result):
    assert result.returncode == 0, f"exit {result.returncode}: {result.stdout}{result.stderr}"
    return result.stdout


def call(name: str, args: dict) -> str:
    return f"{name} {json.dumps(args)}"


def baseline(stack, session: str) -> dict:
    return json.loads((stack.home / "sessions" / session / "0.baseline.json").read_text())


def finished_turn(stack, session: str, owner: str, assistant: str) -> None:
    ok(stack.driver("say", session, owner))
    ok(stack.driver("answer", session, assistant))


def test_m5a_proofs(stack):
    home = stack.home

    # (5) The baseline with the starter soul stays within 3,000 tokens.
    ok(stack.driver("start", "--session", "s-first"))
    first = baseline(stack, "s-first")
    assert tokens.SOUL_STARTER.read_text().strip() in first["system"]
    assert tokens.count_tokens(first)["total"] <= 3_000

    # (1) A fact told in one session is recalled in another.
    finished_turn(stack, "s-first", "The launch window moved to Thursday.", "Noted, Thursday.")
    ok(stack.driver("start", "--session", "s-second"))
    out = ok(
        stack.driver("answer", "s-second", "--call", call("recall", {"query": "launch window"}))
    )
    assert "memory · session s-first" in out and "the owner said" in out
    assert "Thursday" in out
    assert "untrusted" not in out.split("\n", 1)[0]

    # (3) A memory add asks nothing, is listed by bxctl memory log, reaches the next session's
    # baseline and not the session that wrote it.
    out = ok(
        stack.driver(
            "answer",
            "s-second",
            "--call",
            call("memory", {"action": "add", "file": "memory", "text": CAT}),
        )
    )
    assert "memory.md updated (" in out and "it takes effect in the next session" in out
    out = ok(
        stack.driver(
            "answer",
            "s-second",
            "--call",
            call("memory", {"action": "add", "file": "memory", "text": TEA}),
        )
    )
    assert "memory.md updated (" in out
    log = ok(stack.bxctl("memory", "log"))
    add_lines = [line for line in log.splitlines() if "s-second" in line and "add" in line]
    assert len(add_lines) == 2 and all("memory.md" in line for line in add_lines)
    assert CAT not in baseline(stack, "s-second")["system"]
    ok(stack.driver("start", "--session", "s-third"))
    assert CAT in baseline(stack, "s-third")["system"]
    assert TEA in baseline(stack, "s-third")["system"]

    # (2) An entry moved out of memory.md by consolidate is found by recall, tagged identity.
    consolidate = {
        "action": "consolidate",
        "file": "memory",
        "entries": [{"old": CAT, "move": True}, {"old": TEA, "keep": True}],
    }
    out = ok(stack.driver("answer", "s-third", "--call", call("memory", consolidate)))
    assert "memory.md updated (" in out
    assert CAT not in (home / "memory" / "memory.md").read_text()
    out = ok(stack.driver("answer", "s-third", "--call", call("recall", {"query": "cat Miso"})))
    assert "identity · moved " in out and "from memory.md" in out and "Miso" in out

    # (7) bxctl memory undo of the latest edit restores the file; an undo that is not the latest
    # edit of its file is refused, and changes nothing.
    ids = EDIT_ID.findall(ok(stack.bxctl("memory", "log")))
    consolidate_id, older_add = ids[-1], ids[-2]
    before = (home / "memory" / "memory.md").read_text()
    refused = stack.bxctl("memory", "undo", older_add)
    assert refused.returncode != 0 and refused.stderr.strip()
    assert (home / "memory" / "memory.md").read_text() == before
    ok(stack.bxctl("memory", "undo", consolidate_id))
    restored = (home / "memory" / "memory.md").read_text()
    assert CAT in restored and TEA in restored
    assert "undo" in ok(stack.bxctl("memory", "log")).splitlines()[-1]

    # (4) After a fetched page, a write becomes an untrusted note: recall finds it, tagged
    # memory-tainted, and it is in no baseline. (6) Its hit comes back untrusted.
    ok(stack.driver("start", "--session", "s-fetch"))
    ok(stack.driver("say", "s-fetch", "What does example.org/notes say about the release?"))
    out = ok(
        stack.driver(
            "answer", "s-fetch", "--call", call("http_fetch", {"url": "https://example.org/notes"})
        )
    )
    assert "untrusted" in out and "March" in out
    planted = "The release moved to March, says example.org."
    out = ok(
        stack.driver(
            "answer",
            "s-fetch",
            "--call",
            call("memory", {"action": "add", "file": "memory", "text": planted}),
        )
    )
    assert "saved as a note (untrusted): this session has read untrusted content." in out
    refused = stack.driver(
        "answer",
        "s-fetch",
        "--call",
        call("memory", {"action": "remove", "file": "memory", "old": TEA}),
    )
    assert refused.returncode == 1, refused  # a refused call: the driver exits 1
    refused = refused.stdout
    assert "this session has read untrusted content; it can take notes but not change" in refused
    ok(stack.driver("answer", "s-fetch", "The page says the release moved to March."))
    assert planted in (home / "memory" / "notes.md").read_text()
    assert planted not in (home / "memory" / "memory.md").read_text()

    ok(stack.driver("start", "--session", "s-after"))
    assert planted not in baseline(stack, "s-after")["system"]
    assert TEA in baseline(stack, "s-after")["system"]
    out = ok(
        stack.driver(
            "answer", "s-after", "--call", call("recall", {"query": "release March example"})
        )
    )
    assert "memory-tainted · note" in out and planted in out
    header = out.splitlines()[0]
    assert "untrusted" in header, header
    assert "memory-tainted · session s-fetch" in out  # the assistant's words after the page

    # A reindex (its build a child process of memoryd, inside the container) rebuilds the index
    # from the logs and notes.md: the same recall finds the note, labelled as before.
    reindexed = ok(stack.bxctl("reindex"))
    assert reindexed.startswith("reindexed: ") and " logs, " in reindexed, reindexed
    again = ok(
        stack.driver(
            "answer", "s-after", "--call", call("recall", {"query": "release March example"})
        )
    )
    assert "memory-tainted · note" in again and planted in again, again

    # (5) The baseline with every memory file at its limit stays within 3,000 tokens. The owner
    # edits the files by hand (in place, so the files keep their owner).
    for name, text in tokens.full_files().items():
        (home / "memory" / name).write_text(text, encoding="utf-8")
    ok(stack.driver("start", "--session", "s-full"))
    full = baseline(stack, "s-full")
    assert "# memory.md (2,200 of 2,200 characters)" in full["system"]
    assert "# user.md (1,375 of 1,375 characters)" in full["system"]
    assert tokens.count_tokens(full)["total"] <= 3_000
    # ... and a session already running keeps the bytes it started with.
    assert baseline(stack, "s-after")["system"] != full["system"]
