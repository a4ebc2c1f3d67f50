"""A settings file nested hundreds of brackets deep is bad TOML, said in one line naming the file
by every role and by scripts/check_settings.py, never a RecursionError's traceback; and
`check_settings.py --hashes` (run by every `scripts/stack status`) never reads a settings file
larger than any role would read: it hashes what stands for it, and still changes when it does."""

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from proto.config import CONFIG_BYTES, ConfigFile, ConfigInvalid
from tests.integration.stack import REPO, make_settings

sys.path.insert(0, os.fspath(REPO / "scripts"))  # scripts/ is not a package
from check_settings import ROLE_FILES, check, role_hash  # noqa: E402

DEPTH = 1000
NESTED = "[" * DEPTH + "1" + "]" * DEPTH
VENV = Path(sys.executable).parent
# Far below the 2 GiB file below: a reader that takes it whole fails for want of memory.
ADDRESS_LIMIT = 1 << 30
# Each role by its own settings file's name.
ROLE_FILES_OF = {files[0]: role for role, files in ROLE_FILES.items()}


@pytest.fixture
def folders(tmp_path, monkeypatch):
    monkeypatch.setenv("BOXMAKER_HOME", "/var/lib/boxmaker")  # check() sets it; restored after
    settings = make_settings(tmp_path)
    home = tmp_path / "home"
    shutil.copytree(REPO / "config/grants", home / "grants")
    return settings, home


def given_to_the_roles_user(settings: Path) -> None:
    """As scripts/stack does as root in container mode: the folder is uid 10001's."""
    if os.geteuid() == 0:
        for path in [settings, *settings.rglob("*")]:
            os.lchown(path, 10001, 10001)


def test_the_loader_says_a_nested_file_is_not_valid_toml(tmp_path):
    path = tmp_path / "memoryd.toml"
    path.write_text(f"[recall]\nmode = {NESTED}\n")
    with pytest.raises(ConfigInvalid) as raised:
        ConfigFile.load(path, {"recall": {"mode"}})
    assert str(raised.value) == f"{path} is not valid TOML: its values are nested too deeply"


@pytest.mark.parametrize(
    "role, section", [("memoryd", "recall"), ("loopd-shim", "prompt"), ("brokerd-shim", "memory")]
)
def test_each_role_refuses_a_nested_file_in_one_line(tmp_path, role, section):
    path = tmp_path / "settings.toml"
    path.write_text(f"[{section}]\nx = {NESTED}\n")
    proc = subprocess.run(
        [os.fspath(VENV / role), "serve", "--config", os.fspath(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "BOXMAKER_HOME": os.fspath(tmp_path / "home")},
    )
    assert proc.returncode != 0
    [line] = proc.stderr.strip().splitlines()
    assert f"{path} is not valid TOML: its values are nested too deeply" in line, line


@pytest.mark.parametrize("containers", [False, True], ids=["host", "containers"])
@pytest.mark.parametrize("name, section", [("memoryd.toml", "recall"), ("loopd.toml", "prompt")])
def test_check_settings_names_a_nested_file_in_one_line(folders, containers, name, section):
    settings, home = folders
    path = settings / name
    path.write_text(f"[{section}]\nmode = {NESTED}\n")
    given_to_the_roles_user(settings)
    assert check(settings, home, containers) == [
        f"{ROLE_FILES_OF[name]}: {path} is not valid TOML: its values are nested too deeply"
    ]


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_LIMIT, ADDRESS_LIMIT))


def settings_script(*args: str | os.PathLike) -> subprocess.CompletedProcess:
    """scripts/check_settings.py run with no more than ADDRESS_LIMIT of memory."""
    return subprocess.run(
        [sys.executable, os.fspath(REPO / "scripts/check_settings.py"), *map(os.fspath, args)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limited,
        env={**os.environ, "BOXMAKER_HOME": "/var/lib/boxmaker"},
    )


def huge(path: Path, size: int = 2 << 30) -> None:
    """path made a sparse file of size bytes (no disk used)."""
    with open(path, "wb") as f:
        f.truncate(size)


def test_hashes_do_not_read_a_huge_settings_file(folders):
    settings, _ = folders
    huge(settings / "memoryd.toml")
    proc = settings_script("--hashes", settings)
    assert (proc.returncode, proc.stderr) == (0, "")
    said = dict(line.split() for line in proc.stdout.splitlines())
    assert sorted(said) == sorted(ROLE_FILES)
    assert said == {role: role_hash(settings, role) for role in ROLE_FILES}


def test_a_huge_settings_file_changes_its_roles_hash_when_it_changes(folders):
    settings, _ = folders
    before = {role: role_hash(settings, role) for role in ROLE_FILES}
    huge(settings / "memoryd.toml", CONFIG_BYTES + 1)
    made = {role: role_hash(settings, role) for role in ROLE_FILES}
    huge(settings / "memoryd.toml", CONFIG_BYTES + 2)
    grown = {role: role_hash(settings, role) for role in ROLE_FILES}
    assert [r for r in ROLE_FILES if before[r] != made[r]] == ["memoryd"]
    assert [r for r in ROLE_FILES if made[r] != grown[r]] == ["memoryd"]


def test_check_with_containers_does_not_read_a_huge_settings_file(folders):
    settings, home = folders
    path = settings / "memoryd.toml"
    huge(path)
    given_to_the_roles_user(settings)
    proc = settings_script("--containers", settings, home)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert proc.stderr.splitlines() == [
        f"error: memoryd: cannot read {path}: larger than 1,048,576 bytes"
    ]
