"""Crash safety: memoryd killed with SIGKILL at every crash point of a write.

For each operation (add, replace, remove, consolidate with moves, note, an untrusted add, undo,
accept, session_updated, reindex, the catch-up at start, and the owner's forget, edit, promote,
import and restore) a run that is not killed traces every crash point it passes (os.write,
os.fsync, os.replace, SQLite COMMIT and insert batches). Then the operation runs again from the
same home once per point N, killed at N; memoryd is restarted normally and the invariants are
checked each time: memory.md and user.md are old or new, never half; every entry that left a file
is in notes.md; notes.md only grew; the journal parses and no journal line comes before its file;
the block is served and recall answers; and the index equals a reindex of the same logs and
notes.md. The owner's data commands have their own: forget leaves every file whole, and the same
forget run again after the restart finishes it (the text in no file under memory/, recall not
returning it); import leaves each item applied with its journal line or not at all, and importing
the file again applies the rest exactly once; restore leaves the home wholly the old one or wholly
the archive's once the restart has finished it. The last point of each operation restarts memoryd
as a process and asks over its sockets; the others run the same start (memoryd.server.prepare) in
this process, which is what keeps the sweep fast.

The default run kills before every point. The torn sweep (marked slow) also writes half the bytes
of an os.write before the kill, as a crash in the middle of an append would.
"""

import dataclasses
import shutil

import pytest

from tests.reliability.crash_harness import (
    Operation,
    admin_message,
    build_template,
    check_invariants,
    operations,
    run_once,
    snapshot,
)

OPERATIONS = operations()
# Their writes are those of consolidate (add, replace, remove) and of note (untrusted-add), through
# the same functions in the same order: the default run leaves them to the exhaustive sweep.
# The owner's edit and promote write one owner's edit through the same store.apply as undo.
EXHAUSTIVE_ONLY = {"add", "replace", "remove", "untrusted-add", "edit", "promote"}
DEFAULT = [op for op in OPERATIONS if op.name not in EXHAUSTIVE_ONLY]
EXTRA = [op for op in OPERATIONS if op.name in EXHAUSTIVE_ONLY]


@pytest.fixture(scope="module")
def templates(tmp_path_factory) -> dict[bool, object]:
    return {
        review: build_template(tmp_path_factory.mktemp(f"template-review-{review}"), review)
        for review in (False, True)
    }


def sweep(op: Operation, template, tmp_path, *, torn: bool) -> int:
    """Kill op at each of its crash points (write points only when torn); how many were run."""
    op = dataclasses.replace(op, message=admin_message(op, template) or op.message)
    old = snapshot(template)
    reference = run_once(template, tmp_path / "reference", op, 0)
    assert not reference.killed
    new = snapshot(tmp_path / "reference" / "home")
    assert reference.trace, f"{op.name} passed no crash point"
    numbers = [
        n for n, line in enumerate(reference.trace, 1) if not torn or line.split()[1] == "write"
    ]
    for n in numbers:
        case = tmp_path / f"crash-{n}"
        outcome = run_once(template, case, op, n, torn=torn)
        assert outcome.killed, f"{op.name}: not killed at point {n}"
        assert outcome.point == reference.trace[n - 1], "the crash points are not deterministic"
        try:
            check_invariants(case, old, new, op, torn, over_sockets=n == numbers[-1])
        except AssertionError as e:
            raise AssertionError(f"{op.name}, killed at {outcome.point}: {e}") from None
        shutil.rmtree(case)
    print(f"crash sweep {op.name}: {len(numbers)} of {len(reference.trace)} points")
    return len(numbers)


@pytest.mark.parametrize("op", DEFAULT, ids=[op.name for op in DEFAULT])
def test_killed_at_every_point(op, templates, tmp_path):
    assert sweep(op, templates[op.review], tmp_path, torn=False) >= 1


@pytest.mark.slow
@pytest.mark.parametrize("op", EXTRA, ids=[op.name for op in EXTRA])
def test_killed_at_every_point_of_the_other_writes(op, templates, tmp_path):
    assert sweep(op, templates[op.review], tmp_path, torn=False) >= 1


@pytest.mark.slow
@pytest.mark.parametrize("op", OPERATIONS, ids=[op.name for op in OPERATIONS])
def test_torn_append_at_every_write(op, templates, tmp_path):
    sweep(op, templates[op.review], tmp_path, torn=True)
