"""A role's log file kept bounded (proto/logrotate.py), run in a child process whose stderr is
the file, as scripts/stack starts a role without containers, with what an owner or a full disk
may do to the file meanwhile."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from proto import logrotate

BOUND = 8192
LINE = 100  # about, with the time and level

CHILD = """
import logging, os, sys, time
from proto.logline import configure_role
configure_role(rotate=sys.argv[4] == "role")
path, lines, action = sys.argv[1], int(sys.argv[2]), sys.argv[3]
say = logging.getLogger("role").info
for n in range(lines):
    if n == lines // 2 and action != "none":
        if action == "remove":
            os.unlink(path)
        elif action == "replace":
            os.rename(path, path + ".mine")
            open(path, "w").close()
        time.sleep(1.1)  # the role looks at the path once a second
    say("line %05d %s", n, "x" * 60)
print("printed after the lines")
"""


def run_role(
    folder: Path, lines: int, action: str = "none", into: Path | None = None, kind: str = "role"
) -> Path:
    log = folder / "role.log"
    if action == "link":
        (folder / "target").write_text("")
        log.symlink_to(folder / "target")
        into = folder / "started.log"
    elif action == "older-folder":
        (folder / "role.log.1").mkdir()
    env = {**os.environ, logrotate.FILE_ENV: str(log), logrotate.MAX_ENV: str(BOUND)}
    with open(into or log, "ab") as out:
        subprocess.run(
            [sys.executable, "-c", CHILD, str(log), str(lines), action, kind],
            env=env,
            stdout=out,
            stderr=out,
            check=True,
            timeout=60,
        )
    return log


def numbers(text: str) -> list[int]:
    return [
        int(line.split(" line ")[1].split()[0]) for line in text.splitlines() if " line " in line
    ]


def test_a_full_log_is_moved_aside_and_the_latest_lines_stay(tmp_path):
    log = run_role(tmp_path, 1000)  # about 100 KB of lines
    older = tmp_path / "role.log.1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["role.log", "role.log.1"]
    for path in (log, older):
        assert path.stat().st_size <= BOUND + LINE
    assert oct(log.stat().st_mode & 0o777) == "0o600"
    text = log.read_text()
    assert "line 00999" in text and text.endswith("printed after the lines\n")
    found = numbers(older.read_text() + text)
    assert found == list(range(found[0], 1000))  # the newest, in order, none lost between


def test_a_removed_log_is_made_again_and_written_to(tmp_path):
    """The owner removes ROLE.log while the role runs: its lines go to a new ROLE.log, not on
    into the removed file, whose space would never come back."""
    log = run_role(tmp_path, 60, "remove")
    assert numbers(log.read_text()) == list(range(30, 60))


def test_a_child_of_the_role_follows_the_file_and_never_moves_it(tmp_path):
    """The embedder and the rebuild inherit the role's log: after the role moved it aside, their
    lines go to the new file, not to the one moved away; they never move or cut it themselves."""
    log = run_role(tmp_path, 1000, "replace", kind="child")
    assert numbers(log.read_text()) == list(range(500, 1000))
    assert not (tmp_path / "role.log.1").exists()  # over the bound: a child leaves it as it is
    assert log.stat().st_size > BOUND


def test_a_log_replaced_by_another_file_is_followed(tmp_path):
    """The owner's own rotation (move aside, make an empty one): the role writes to the new."""
    log = run_role(tmp_path, 60, "replace")
    assert numbers(log.read_text()) == list(range(30, 60))
    assert numbers((tmp_path / "role.log.mine").read_text()) == list(range(30))


@pytest.mark.parametrize("action", ["older-folder", "link"])
def test_a_log_that_cannot_be_moved_aside_is_cut_in_place_never_grown_nor_followed(
    tmp_path, action
):
    """ROLE.log.1 a folder, or ROLE.log a link: nothing is moved nor written through a link;
    the file the role writes to is cut back to empty when full, so it stays bounded, and the
    role says so once."""
    log = run_role(tmp_path, 1000, action)
    written = tmp_path / ("started.log" if action == "link" else "role.log")
    text = written.read_text()
    assert written.stat().st_size <= BOUND + LINE
    # The latest lines stay; the cut follows the line that filled the file, so when the last line
    # did (a matter of the lines' lengths, the folder's name among them) none is left.
    got = numbers(text)
    assert got == list(range(got[0], 1000)) if got else "printed after the lines" in text
    if action == "link":
        assert (tmp_path / "target").read_text() == "" and log.is_symlink()
    else:
        assert (tmp_path / "role.log.1").is_dir()
    said = [line for line in (tmp_path / "role.log").read_text().splitlines() if "log file" in line]
    assert len(said) <= 1


def test_without_a_file_named_stderr_is_left_as_it_is(tmp_path):
    out = tmp_path / "elsewhere.log"
    with open(out, "ab") as f:
        subprocess.run(
            [sys.executable, "-c", CHILD, str(tmp_path / "role.log"), "600", "none", "role"],
            env={k: v for k, v in os.environ.items() if k != logrotate.FILE_ENV},
            stdout=f,
            stderr=f,
            check=True,
            timeout=60,
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere.log"]
    assert out.stat().st_size > 40_000


def test_a_bound_that_is_not_a_number_or_too_small_is_not_taken():
    assert logrotate.handler_from_env({}) is None
    for given, taken in [("lots", logrotate.MAX_BYTES), ("10", logrotate.LEAST_BYTES)]:
        handler = logrotate.handler_from_env({logrotate.FILE_ENV: "/x", logrotate.MAX_ENV: given})
        assert handler is not None and handler.max_bytes == taken
