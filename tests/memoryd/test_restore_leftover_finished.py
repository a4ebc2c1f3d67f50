"""A restore that finished leaves nothing a later start carries out again. Its staging folder is
removed last, and that removal can fail part way (a disk error on one file in it) or be cut by a
kill: what is left is found at a later start, after sessions and the owner wrote on. Taking the
plan's copy in it for a restore stopped part way deleted the files written since that the plan
had removed (the recall log, a staged write), or said the finished restore was half done and
told the owner to restore the archive again. The copy is marked laid before the plan is dropped:
such a folder is only removed, and the failed removal is said when it happens. A plan or copy
too large to be one memoryd writes is refused by its size, never read whole."""

import errno
import functools
import json
import logging
import os
import tracemalloc

import pytest

from memoryd.data import lay, layout, restoreplan
from memoryd.errors import MemorydError
from memoryd.memory.store import MemoryStore
from tests.memoryd import owner_data_harness
from tests.memoryd.owner_data_harness import Memoryd

ARCHIVED = "Zebra notes about kiwis."


def _memory(m: Memoryd) -> dict[str, bytes]:
    return {name: p.read_bytes() for name, p in layout.memory_files(m.home)}


def _leftovers(m: Memoryd) -> list[str]:
    return sorted(p.name for p in m.home.memory.iterdir() if p.name.startswith(".restore"))


def _said(caplog, level=logging.WARNING) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("memoryd.data.") and r.levelno >= level
    ]


def _unlink_fails_once_in_staging(monkeypatch) -> list[str]:
    """EIO, once, from the unlink of the plan's copy (plan.json, or laid.json once marked) as the
    staging folder is removed: the folder outlives the restore. The names it failed on."""
    real, failed = os.unlink, []

    def unlink(path, *args, dir_fd=None, **kw):
        name = os.path.basename(os.fspath(path))
        if not failed and dir_fd is not None and name in (restoreplan.COPY, restoreplan.LAID):
            failed.append(name)
            raise OSError(errno.EIO, "Input/output error", name)
        return real(path, *args, dir_fd=dir_fd, **kw)

    monkeypatch.setattr(os, "unlink", unlink)
    return failed


def _restored_with_a_leftover(m: Memoryd, monkeypatch, caplog, review: bool) -> str:
    """Back up, then give the home files the archive lacks (the plan removes them), then restore
    --replace with the staging folder's removal failing once. The staging folder's name."""
    archive = os.path.basename(m.data("backup")["path"])
    m.recall("kiwis")  # a recall log month the archive lacks
    if review:
        assert "pending as" in m.call(
            {"action": "add", "file": "memory", "text": "Wifi on fridge."}
        )
    with monkeypatch.context() as fault:
        failed = _unlink_fails_once_in_staging(fault)
        caplog.clear()
        with caplog.at_level(logging.INFO):
            out = m.data("restore", name=archive, replace=True)
    assert out["restored"] == archive and failed
    plan_gone = not lay.plan_path(m.home).exists()
    assert plan_gone and m.service.unfinished is None
    (staging,) = _leftovers(m)
    (warned,) = _said(caplog)
    assert f"{staging}: a restore's staging folder could not be removed" in warned
    assert "Input/output error" in warned and "the next start removes what is left" in warned
    assert not (m.home.memory / staging / restoreplan.COPY).exists()  # marked laid, not a plan
    return staging


def _memoryd(root, monkeypatch, review: bool) -> Memoryd:
    if review:
        store = functools.partial(MemoryStore, review=True)
        monkeypatch.setattr(owner_data_harness, "MemoryStore", store)
    return Memoryd(root)


@pytest.mark.parametrize("after", ["recalled", "wrote", "staged"])
def test_a_finished_restores_leftover_folder_is_only_removed_at_the_next_start(
    tmp_path, monkeypatch, caplog, after
):
    review = after == "staged"
    m = _memoryd(tmp_path / "home", monkeypatch, review)
    try:
        m.call({"action": "note", "text": ARCHIVED})
        _restored_with_a_leftover(m, monkeypatch, caplog, review)
        # Written after the restore: files the plan removed, made again (the recall log, a
        # staged write) and, for "wrote", files it laid, changed since.
        m.recall("zebra")
        if after == "wrote":
            m.call({"action": "add", "file": "user", "text": "The owner likes tea."})
            m.call({"action": "note", "text": "After the restore: the gate code is 4412."})
        if review:
            staged = m.call({"action": "add", "file": "memory", "text": "The cat is Miso."})
            assert "pending as" in staged
        held = _memory(m)
        assert any(name.startswith("memory/recalls/") for name in held)
    finally:
        m.close()
    caplog.clear()
    with caplog.at_level(logging.INFO):
        again = _memoryd(tmp_path / "home", monkeypatch, review)  # the next start
    try:
        assert _memory(again) == held  # nothing written since was removed or changed
        assert not _said(caplog, logging.ERROR)
        assert not any("restore" in x for x in _said(caplog))
        assert any(
            "removed, left by a restore that had laid every file" in x
            for x in _said(caplog, logging.INFO)
        )
        assert _leftovers(again) == []
        if review:
            pending = again.home.memory_file("pending.jsonl").read_bytes()
            assert b"The cat is Miso." in pending
    finally:
        again.close()


def test_an_older_memoryds_copy_left_after_its_restore_removes_nothing(
    tmp_path, monkeypatch, caplog
):
    """An older memoryd dropped the plan before its copy: a copy it left with every file gone
    from its folder is taken as a finished restore's, whatever was written since."""
    m = Memoryd(tmp_path / "home")
    try:
        m.call({"action": "note", "text": ARCHIVED})
        staging = _restored_with_a_leftover(m, monkeypatch, caplog, review=False)
        folder = m.home.memory / staging
        kept = folder / restoreplan.LAID
        plan = json.loads(kept.read_bytes())
        plan.pop(restoreplan.MARKED)
        (folder / restoreplan.COPY).write_text(json.dumps(plan))  # as the older memoryd left it
        kept.unlink()
        assert plan["remove"]  # the recall log the archive lacked
        m.recall("zebra")
        m.call({"action": "add", "file": "user", "text": "The owner likes tea."})
        held = _memory(m)
    finally:
        m.close()
    caplog.clear()
    with caplog.at_level(logging.INFO):
        again = Memoryd(tmp_path / "home")
    try:
        assert _memory(again) == held
        assert not _said(caplog)
        assert _leftovers(again) == []
    finally:
        again.close()


@pytest.mark.parametrize("times", [1, None])
def test_marking_the_copy_laid_failing_leaves_the_restore_to_be_finished(
    tmp_path, monkeypatch, times
):
    """The copy's mark is part of carrying the plan out: when it fails, the plan stays, laid
    again at once, and if that fails too the restore is unfinished until a restart."""
    m = Memoryd(tmp_path / "home")
    real, failed = os.replace, []

    def replace(src, dst, *a, **k):
        if os.path.basename(os.fspath(dst)) == restoreplan.LAID:
            if times is None or len(failed) < times:
                failed.append(dst)
                raise OSError(errno.EIO, "Input/output error")
        return real(src, dst, *a, **k)

    try:
        m.call({"action": "note", "text": ARCHIVED})
        archive = os.path.basename(m.data("backup")["path"])
        m.recall("kiwis")  # the plan removes this month
        monkeypatch.setattr(os, "replace", replace)
        if times == 1:
            out = m.data("restore", name=archive, replace=True)
            assert out["restored"] == archive and len(failed) == 1
            assert _leftovers(m) == [] and m.service.unfinished is None
            return
        with pytest.raises(MemorydError) as refused:
            m.data("restore", name=archive, replace=True)
        assert "stopped part way (Input/output error), and again" in str(refused.value)
        assert lay.plan_path(m.home).exists() and m.service.unfinished is not None
    finally:
        m.close()
    monkeypatch.undo()  # the disk is fixed; memoryd restarts
    again = Memoryd(tmp_path / "home")
    try:
        assert _leftovers(again) == [] and not lay.plan_path(again.home).exists()
        assert not any(name.startswith("memory/recalls/") for name in _memory(again))
        assert "kiwis" in again.recall("kiwis").lower()
    finally:
        again.close()


@pytest.mark.parametrize("where", ["plan", "copy"])
def test_a_huge_plan_is_refused_by_its_size_without_being_read(tmp_path, caplog, where):
    m = Memoryd(tmp_path / "home")
    m.close()
    if where == "plan":
        path = lay.plan_path(m.home)
    else:
        os.mkdir(m.home.memory / ".restore-0123456789ab", 0o700)
        path = m.home.memory / ".restore-0123456789ab" / restoreplan.COPY
    with open(path, "wb") as f:
        f.truncate(64 << 20)  # sparse: no disk used
    caplog.clear()
    tracemalloc.start()
    try:
        with caplog.at_level(logging.INFO):
            lay.recover(m.home)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20
    (said,) = _said(caplog)
    assert f"{path}: " in said and "not a plan memoryd writes: 67,108,864 bytes" in said
    if where == "plan":
        assert "a restore's plan cannot be read" in said and path.exists()  # left for the owner
    else:
        assert _leftovers(m) == []  # a copy that cannot be one: the folder changed nothing


def test_a_plan_too_large_to_be_read_back_is_refused_before_the_home_is_touched(
    tmp_path, monkeypatch
):
    m = Memoryd(tmp_path / "home")
    try:
        m.call({"action": "note", "text": ARCHIVED})
        archive = os.path.basename(m.data("backup")["path"])
        m.recall("kiwis")
        held = _memory(m)
        monkeypatch.setattr(restoreplan, "MOST", 200)
        with pytest.raises(MemorydError) as refused:
            m.data("restore", name=archive, replace=True)
        assert "its plan would be larger than 200 bytes" in str(refused.value)
        assert "the home is as it was" in str(refused.value)
        assert _memory(m) == held and _leftovers(m) == []
        assert not lay.plan_path(m.home).exists()
    finally:
        m.close()
