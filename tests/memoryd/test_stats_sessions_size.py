"""stats' sessions/ size is what the folder's files take: each session's log and its baseline
(0.baseline.json, written once at its start, often larger than the log), and whatever a folder
without an indexed log holds, found without walking the folder of every session."""

import json
import os

from memoryd.data import carriers
from tests.memoryd.owner_data_harness import Memoryd


def _files_size(root) -> int:
    return sum(
        os.lstat(os.path.join(folder, name)).st_size
        for folder, _, names in os.walk(root)
        for name in names
    )


def test_sessions_size_counts_the_baselines_and_folders_without_a_log(tmp_path, monkeypatch):
    md = Memoryd(tmp_path / "home")
    try:
        md.say("s-one", "alpha words said", "alpha reply")
        md.say("s-two", "bravo words said at more length", "bravo reply")
        sessions = md.index.home.sessions
        for name in ("s-one", "s-two", "s-three"):  # s-three: a baseline and no log yet
            (sessions / name).mkdir(mode=0o700, exist_ok=True)
            baseline = {"session": name, "system": "x" * 5_500, "tools": []}
            (sessions / name / "0.baseline.json").write_text(json.dumps(baseline))
        walked = []
        real = carriers._tree_size
        monkeypatch.setattr(carriers, "_tree_size", lambda p: walked.append(p) or real(p))
        found = json.loads(md.admin("stats", '{"json": true}'))
        logs = sum(os.stat(md.index.home.session_log(s)).st_size for s in ("s-one", "s-two"))
        assert found["sizes"]["sessions/"] == _files_size(sessions) > logs + 3 * 5_500
        assert walked == [os.fspath(sessions / "s-three")]  # the others: a stat a file
    finally:
        md.close()
