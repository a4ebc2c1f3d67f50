"""memoryd's start with {home}/run left as a file (a cleaner of run folders, `rm -r run; touch
run`): refused in one line naming run, as a wrong kind of index/ or memory/ is."""

from pathlib import Path

import pytest

from memoryd.config import load
from memoryd.errors import StartFailed
from memoryd.server import prepare
from tests.memoryd.test_service import SOUL


def test_run_left_as_a_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "soul.md").write_text(SOUL)
    config = tmp_path / "memoryd.toml"
    home = tmp_path / "home"
    config.write_text(f'[paths]\nhome = "{home}"\n')
    home.mkdir(mode=0o700)
    (home / "run").write_text("")
    with pytest.raises(StartFailed) as failed:
        prepare(load(config))
    said = str(failed.value)
    own = "memoryd uses only its own files and folders in its home"
    assert said == f"{home / 'run'} is not a folder; {own}", said
    assert (home / "run").is_file()  # left as it was, for the owner to look at
