"""The journal's files lost, then new edits written: bxctl memory log lists the new ones and, where
its listing reaches the oldest line the journal holds, says that the edits journalled before it are
gone (runbook journal-lost), as text and as JSON. It says so for as long as their lines stay gone,
across restarts and past the days the issued ids keep, and stops once they are back."""

import datetime as dt
import json
import os
import subprocess

import pytest

from memoryd.errors import AdminRefused
from memoryd.journal import ids, idsvalue
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import Clock

DAY = "2026-09-24"


@pytest.fixture
def clock():
    return Clock()


def _lose_journal(md: Memoryd) -> None:
    for month in md.home.edits.glob("*.jsonl"):
        month.unlink()


def test_log_after_the_lost_journal_says_the_edits_before_are_gone(tmp_path, clock):
    md = Memoryd(tmp_path / "home", clock=clock)
    md.call({"action": "add", "file": "memory", "text": "Launch is Thursday."})
    md.call({"action": "add", "file": "memory", "text": "Rack B7."})
    archive = md.data("backup")["path"]
    _lose_journal(md)
    md.call({"action": "add", "file": "user", "text": "Prefers tea over coffee."})
    listed = md.admin("log").splitlines()
    oldest = listed[0].split()[0]
    assert oldest == f"{DAY}-0003"
    assert listed[-1] == (
        f"(edits memoryd journalled before {oldest} (from {DAY}-0001 on) are no longer in the "
        "journal: their lines left memory/edits/ (deleted or replaced); the memory files stand as "
        "they are. A backup holds the lines up to its time: tar -xzOf ARCHIVE memory/edits prints "
        "them and changes nothing (runbook: journal-lost))"
    )
    as_json = json.loads(md.admin("log", {"json": True}))
    assert as_json["lost"] == {"first": f"{DAY}-0001", "before": oldest, "runbook": "journal-lost"}
    assert "journal-lost" not in md.admin("log", {"n": 1})  # the listing stops short of the oldest
    with pytest.raises(AdminRefused, match=r"no longer holds .*\(runbook: journal-lost\)\Z"):
        md.admin("show", {"id": f"{DAY}-0001"})
    md.close()

    # as long as the lines stay gone: after a restart, and after more days than the ids keep
    md = Memoryd(tmp_path / "home", clock=clock)
    for day in range(idsvalue.ISSUED_DAYS + 3):
        clock.advance(days=1)
        md.call({"action": "add", "file": "memory", "text": f"Day {day} note."})
    kept = json.loads((md.home.memory / ".ids.json").read_text())["edit"]
    assert len(kept) == idsvalue.ISSUED_DAYS
    whole = md.admin("log", {"n": 100})
    assert whole.splitlines()[0].startswith(oldest)
    assert f"before {oldest} (from {DAY}-0001 on)" in whole.splitlines()[-1]
    with pytest.raises(AdminRefused) as refused:  # its day no longer kept among the issued ids
        md.admin("undo", f"{DAY}-0002")
    assert str(refused.value) == (
        f"refused: the journal holds no edit {DAY}-0002; edits memoryd journalled before {oldest} "
        f"(from {DAY}-0001 on) are no longer in the journal, their lines deleted or replaced "
        "(runbook: journal-lost)"
    )

    # the lines put back (from the backup, in front of the month's): nothing more is said
    month = md.home.edits / f"{DAY[:7]}.jsonl"
    kept = subprocess.run(
        ["tar", "-xzOf", archive, f"memory/edits/{month.name}"],
        capture_output=True,
        check=True,
        cwd=os.fspath(md.home.root),
        timeout=30,
    ).stdout
    month.write_bytes(kept + month.read_bytes())
    assert "journal-lost" not in md.admin("log", {"n": 100})
    assert json.loads(md.admin("log", {"n": 100, "json": True}))["lost"] is None
    md.close()


def test_a_journal_never_lost_says_nothing_of_it(tmp_path, clock):
    md = Memoryd(tmp_path / "home", clock=clock)
    md.call({"action": "add", "file": "memory", "text": "Launch is Thursday."})
    clock.advance(days=1)
    md.call({"action": "add", "file": "memory", "text": "Rack B7."})
    assert "no longer" not in md.admin("log")
    assert json.loads(md.admin("log", {"json": True}))["lost"] is None
    assert ids.Issued(md.home).first("edit") == f"{DAY}-0001"
    md.close()


def test_an_ids_file_from_before_the_first_was_kept_counts_from_its_earliest_day(tmp_path, clock):
    md = Memoryd(tmp_path / "home", clock=clock)
    md.call({"action": "add", "file": "memory", "text": "Launch is Thursday."})
    md.close()
    (md.home.memory / ".ids.json").write_text(json.dumps({"edit": {DAY: 1}}))
    clock.now += dt.timedelta(days=1)
    md = Memoryd(tmp_path / "home", clock=clock)
    md.call({"action": "add", "file": "memory", "text": "Rack B7."})
    assert "no longer" not in md.admin("log")
    assert ids.Issued(md.home).first("edit") == f"{DAY}-0001"
    md.close()
