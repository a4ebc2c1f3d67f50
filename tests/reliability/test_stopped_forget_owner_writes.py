"""A forget killed part way (SIGKILL at its crash points), memoryd restarted, then the owner's
writes that could bring its text back: undo of the remove that dropped it to notes.md, promote of
that note, an edit of memory.md holding it, accept of a staged add of it (review on).

While the forget stands stopped (stats says so), each is refused in one line naming the stopped
forget and the command that finishes it, as restore and import are, and the text stays out of
memory.md and the block; once the forget is run again it is finished and the text stays out.
Killed before its record was written, the forget had not begun (nothing forgotten, bxctl said the
change may not have been applied): nothing is asked of those points.

The default run kills it once at each stage it can stop at; the exhaustive run
(RELIABILITY_EXHAUSTIVE=1) at every point.
"""

import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from proto.client import RemoteError, request
from proto.errors import ProtoError
from proto.messages import MemoryAdmin, MemoryBlock
from tests.reliability.conftest import EXHAUSTIVE
from tests.reliability.crash_harness import Memoryd, memory_call, write_config

SECRET = "Secret Walrus 7781."
KEEP = "Keep this."
FINISH = f"run bxctl memory forget {SECRET!r} again to finish it first"


def admin(m: Memoryd, command: str, arg: str = "") -> str:
    try:
        return request(m.sockets["admin"], MemoryAdmin(command=command, arg=arg), timeout=30).text
    except RemoteError as e:
        return str(e)


def block(m: Memoryd) -> str:
    return request(m.sockets["loop"], MemoryBlock(), timeout=20).text


def template(root: Path, review: bool) -> Path:
    """A home whose memory.md held SECRET, removed by a session (its copy dropped to notes.md),
    or, with review on, where a session's add of SECRET is staged."""
    t = root / ("review" if review else "plain")
    t.mkdir()
    write_config(t, review=review)
    m = Memoryd(t)
    try:
        assert m.start(crashing=False)
        calls = [{"action": "add", "file": "memory", "text": SECRET}]
        if not review:
            calls = [{"action": "add", "file": "memory", "text": KEEP}, *calls]
            calls.append({"action": "remove", "file": "memory", "old": SECRET})
        for arguments in calls:
            assert request(m.sockets["broker"], memory_call(arguments), timeout=20).ok
    finally:
        m.stop()
    return t


def killed(source: Path, case: Path, review: bool, at: int) -> Memoryd:
    """The forget of SECRET run on a copy of source, killed at point at (0: not killed)."""
    shutil.copytree(source / "home", case / "home", symlinks=True)
    write_config(case, review=review)
    m = Memoryd(case)
    forget = MemoryAdmin(command="forget", arg=json.dumps({"id": SECRET}))
    try:
        if m.start(at):
            try:
                request(m.sockets["admin"], forget, timeout=30)
            except (ProtoError, RemoteError):
                m.proc.wait(10)
    finally:
        m.stop()
    return m


def owner_writes(m: Memoryd, review: bool) -> list[tuple[str, str]]:
    """Each owner write that could bring SECRET back, and its answer."""
    if review:
        ids = re.findall(r"\bp-[0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9]{4}\b", admin(m, "pending"))
        return [("accept", admin(m, "accept", ids[0]))] if ids else []
    removes = [line.split()[0] for line in admin(m, "log").splitlines() if " remove " in line]
    copy = json.loads(admin(m, "file", json.dumps({"file": "memory"})))
    edit = {"file": "memory", "text": f"{KEEP}\n§\n{SECRET}\n", "base": copy["base"]}
    return [
        ("undo", admin(m, "undo", removes[0])),
        ("promote", admin(m, "promote", json.dumps({"ref": SECRET, "file": "memory"}))),
        ("edit", admin(m, "edit", json.dumps(edit))),
    ]


def points(source: Path, scratch: Path, review: bool) -> list[int]:
    """The forget's crash points to kill at (a kill at point N comes before its step): every one
    (exhaustive), else one at each stage of a forget stopped part way: its record just in place,
    notes.md rewritten, its journal line written, the journal scrubbed but not yet listed in
    forgotten.jsonl."""
    trace = killed(source, scratch / "ref", review, 0).outcome().trace
    shutil.rmtree(scratch / "ref")
    if EXHAUSTIVE:
        return list(range(1, len(trace) + 1))
    steps = [" ".join(p.split()[1:]) for p in trace]
    after = ("replace .forgetting.json", "fsync .notes.md.tmp")
    picked = {n + 1 for n, step in enumerate(steps, 1) if step in after}
    month = next(
        n for n, step in enumerate(steps, 1) if re.fullmatch(r"fsync \d{4}-\d\d.jsonl", step)
    )
    picked |= {month + 1, steps.index("write forgotten.jsonl") + 1}
    return sorted(picked)


@pytest.mark.parametrize("review", [False, True], ids=["undo-promote-edit", "accept"])
def test_owner_writes_refused_while_a_forget_stands_stopped(review: bool) -> None:
    root = Path(tempfile.mkdtemp(prefix="stoppedforget-"))
    try:
        source = template(root, review)
        stopped_seen = 0
        for at in points(source, root, review):
            case = root / f"c{at}"
            m = killed(source, case, review, at)
            where = m.outcome().point
            again = Memoryd(case)
            try:
                assert again.start(crashing=False)
                stopped = "stopped part way" in admin(again, "stats", "{}")
                assert stopped or EXHAUSTIVE, f"killed at {where}: no forget stopped part way"
                answers = owner_writes(again, review)
                memory = (case / "home/memory/memory.md").read_text()
                assert SECRET not in block(again) or not stopped, (where, answers)
                if stopped:
                    stopped_seen += 1
                    assert SECRET not in memory, (where, answers)
                    for command, answer in answers:
                        assert answer.startswith("refused: a forget of "), (where, command, answer)
                        assert FINISH in answer and "stopped part way" in answer, answer
                    finished = admin(again, "forget", json.dumps({"id": SECRET}))
                    assert json.loads(finished)["message"].startswith("forgot "), finished
                    assert SECRET not in (case / "home/memory/memory.md").read_text()
                    assert SECRET not in block(again)
            finally:
                again.stop()
            shutil.rmtree(case)
        assert stopped_seen, "no kill left a forget stopped part way"
    finally:
        shutil.rmtree(root, ignore_errors=True)
