"""scripts/check_settings.py: the stack's settings checked on the host by the roles' own code.

Each mistake is one line that names the host file, the key and what is wrong; the example
settings pass; the hash a container is labelled with changes with exactly the files its role
reads. Also `scripts/stack check` itself, in process mode (no engine needed).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from proto import files
from tests.integration.stack import REPO, make_settings

sys.path.insert(0, os.fspath(REPO / "scripts"))
from check_settings import ROLE_FILES, check, role_hash  # noqa: E402


@pytest.fixture(autouse=True)
def home_restored(monkeypatch):
    """check() sets BOXMAKER_HOME to the containers' home, as the roles there see it; restored
    after, so that no later test's command takes it for its own."""
    monkeypatch.setenv("BOXMAKER_HOME", "/var/lib/boxmaker")


@pytest.fixture
def folders(tmp_path):
    settings = make_settings(tmp_path)
    home = tmp_path / "home"
    shutil.copytree(REPO / "config/grants", home / "grants")
    return settings, home


def test_the_example_settings_pass(folders):
    assert check(*folders) == []


# (file, text written over it or appended, what the one line must hold)
MISTAKES = [
    ("memoryd.toml", "[memory]\nreveiw = true\n", "memoryd.toml: unknown key reveiw in [memory]"),
    ("memoryd.toml", '[recall]\nmode = "fancy"\n', "[recall] mode must be one of spec, context"),
    ("memoryd.toml", "[index]\nmax_class = 3\n", "[index] max_class must be one of"),
    ("memoryd.toml", "[memory]\nreview = maybe\n", "memoryd.toml is not valid TOML"),
    ("memoryd.toml", "[limits]\nrequest_seconds = 0\n", "[limits] request_seconds must be"),
    ("memoryd.toml", '[memory]\nsoul_starter = "gone.md"\n', "gone.md: cannot read the starter"),
    ("memoryd.toml", '[paths]\nhome = "/srv/x"\n', "[paths] home must stay /var/lib/boxmaker"),
    ("memoryd.toml", "[colour]\nx = 1\n", "memoryd.toml: unknown section [colour]"),
    ("loopd.toml", "[prompt]\nsystem = 'none.md'\n", "cannot read the system prompt"),
    ("loopd.toml", "[broker]\nsockett = 'x'\n", "loopd.toml: unknown key sockett in [broker]"),
    ("brokerd.toml", "[memory]\ntimeout_seconds = -1\n", "[memory] timeout_seconds must be"),
    ("grants/bad.toml", "tool = 'web'\n", "grants/bad.toml: missing key mode"),
    (
        "grants/recall.toml",
        "tool='recall'\nmode='auto'\nmax_taint='public'\nresult_class='public'\nuntrusted=false\n",
        "recall.toml: the policy of recall",
    ),
]


@pytest.mark.parametrize("name, text, said", MISTAKES, ids=[m[2][:40] for m in MISTAKES])
def test_each_mistake_is_one_line_naming_the_file_and_key(folders, name, text, said):
    settings, home = folders
    if name.startswith("grants/"):
        (home / name).write_text(text)
        path = home / name
    else:
        path = settings / name
        # A section already in the example is replaced, not repeated (TOML refuses that).
        lines = path.read_text().splitlines()
        header = text.splitlines()[0]
        if header in lines:
            cut = lines.index(header)
            end = next((i for i in range(cut + 1, len(lines)) if lines[i].startswith("[")), None)
            lines = lines[:cut] + lines[end:] if end is not None else lines[:cut]
        path.write_text("\n".join(lines) + "\n" + text)
    [line] = check(settings, home)
    assert said in line, line
    assert os.fspath(path.parent) in line or os.fspath(path) in line, line
    assert "\n" not in line


def test_a_missing_role_file_is_named(folders):
    settings, home = folders
    (settings / "brokerd.toml").unlink()
    assert check(settings, home) == [f"brokerd-shim: {settings / 'brokerd.toml'}: missing"]


@pytest.mark.parametrize("role", sorted(ROLE_FILES))
def test_a_role_hash_changes_with_its_own_files_only(folders, role):
    settings, _ = folders
    before = {r: role_hash(settings, r) for r in ROLE_FILES}
    (settings / ROLE_FILES[role][-1]).write_text("changed\n")
    after = {r: role_hash(settings, r) for r in ROLE_FILES}
    assert [r for r in ROLE_FILES if before[r] != after[r]] == [role]


@pytest.mark.parametrize("role", sorted(ROLE_FILES))
def test_a_file_that_cannot_be_read_changes_its_roles_hash_without_an_error(
    folders, role, monkeypatch
):
    # status hashes the settings before it asks any role: a file the owner cannot read (copied
    # in with sudo under umask 077) marks the role out of date, and check says why.
    settings, _ = folders
    before = {r: role_hash(settings, r) for r in ROLE_FILES}
    closed = settings / ROLE_FILES[role][-1]
    real = files.read_setting

    def read_setting(path, limit):
        if path == closed:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, limit)

    monkeypatch.setattr(files, "read_setting", read_setting)
    after = {r: role_hash(settings, r) for r in ROLE_FILES}
    assert [r for r in ROLE_FILES if before[r] != after[r]] == [role]


def test_stack_check_names_the_mistake_and_starts_nothing(tmp_path):
    env = {
        **os.environ,
        "BOXMAKER_HOME": os.fspath(tmp_path / "home"),
        "BOXMAKER_CONFIG": os.fspath(tmp_path / "config"),
        "BOXMAKER_STACK_STATE": os.fspath(tmp_path / "state"),
        "BOXMAKER_STACK": "process",
    }

    def stack(*args):
        return subprocess.run(
            [os.fspath(REPO / "scripts/stack"), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )

    # A settings folder named and not there is a typo: nothing is made, nothing vouched for.
    for name in ("home", "config"):
        missing = stack("check")
        assert missing.returncode == 1 and not (tmp_path / name).exists()
        said = f"error: BOXMAKER_{name.upper()}={tmp_path / name} does not exist: point "
        assert missing.stderr.startswith(said), missing.stderr
        (tmp_path / name).mkdir()
    first = stack("check")  # an empty folder the owner made is given the shipped settings
    assert first.returncode == 0, first.stderr
    seeded = sorted(p.name for p in (tmp_path / "config").iterdir())
    assert seeded == sorted(p.name for p in (REPO / "config").iterdir() if p.is_file())
    memoryd = tmp_path / "config/memoryd.toml"
    memoryd.write_text(memoryd.read_text().replace("review = false", "reveiw = false"))
    wrong = stack("check")
    assert wrong.returncode == 1
    assert wrong.stderr.splitlines()[0] == (
        f"error: memoryd: {memoryd}: unknown key reveiw in [memory]"
    )
    assert "reveiw" in memoryd.read_text(), "check rewrote the owner's file"
    up = stack("up")
    assert up.returncode == 1 and "unknown key reveiw in [memory]" in up.stderr
    assert not (tmp_path / "state/memoryd.pid").exists(), "up started a role with bad settings"


@pytest.mark.parametrize("name", ["BOXMAKER_HOME", "BOXMAKER_CONFIG"])
def test_a_file_where_a_folder_belongs_is_one_line(tmp_path, name):
    (tmp_path / "file").write_text("x")
    env = {
        **os.environ,
        "BOXMAKER_HOME": os.fspath(tmp_path / "home"),
        name: os.fspath(tmp_path / "file"),
    }
    env["BOXMAKER_STACK_STATE"] = os.fspath(tmp_path / "state")
    done = subprocess.run(
        [os.fspath(REPO / "scripts/stack"), "up"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"error: {name}={tmp_path / 'file'} is not a folder; point {name} at a folder "
        f"(default {REPO / '.local' / ('home' if name == 'BOXMAKER_HOME' else 'config')})"
    ]


def test_a_venv_without_the_roles_code_is_not_called_a_settings_mistake(tmp_path):
    """A venv that cannot load the roles' code (a clone moved since its venv was made) is one
    line saying so and what to do, never a traceback nor "the settings are not valid"."""
    venv = tmp_path / "venv"  # a venv that holds none of the project
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True, timeout=60)
    for name in ("home", "config"):
        (tmp_path / name).mkdir()
    env = {
        **os.environ,
        "VENV": os.fspath(venv),
        "BOXMAKER_HOME": os.fspath(tmp_path / "home"),
        "BOXMAKER_CONFIG": os.fspath(tmp_path / "config"),
        "BOXMAKER_STACK_STATE": os.fspath(tmp_path / "state"),
        "BOXMAKER_STACK": "process",
    }
    done = subprocess.run(
        [os.fspath(REPO / "scripts/stack"), "check"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert "Traceback (most recent call last):" not in lines, done.stderr
    assert lines[-2].startswith(
        f"error: the settings cannot be checked: {venv} cannot load the roles' code (No module"
    ), lines
    assert lines[-2].endswith("; run scripts/setup-dev (it makes the venv anew), then this again")
    assert lines[-1] == (
        f"error: the settings in {tmp_path / 'config'} could not be checked (exit 3, the lines"
        " above say why); nothing was started or changed"
    )


def _given_to_the_roles_user(settings: Path) -> None:
    """As scripts/stack does as root in container mode: the folder is uid 10001's."""
    if os.geteuid() == 0:
        for path in [settings, *settings.rglob("*")]:
            os.lchown(path, 10001, 10001)


@pytest.mark.parametrize("name", ["memoryd.toml", "system.md"])
@pytest.mark.parametrize("how", ["absolute", "out of the folder"])
def test_in_containers_a_link_out_of_the_settings_folder_is_one_line(folders, name, how):
    """The folder is all the containers see of the host (at /etc/boxmaker): a link there to an
    absolute path, or out of the folder, names nothing inside, though the host reads it."""
    settings, home = folders
    profile = settings.parent / "profiles" / f"work-{name}"
    profile.parent.mkdir()
    (settings / name).rename(profile)
    target = os.fspath(profile) if how == "absolute" else f"../profiles/{profile.name}"
    (settings / name).symlink_to(target)
    _given_to_the_roles_user(settings)
    role = "memoryd" if name == "memoryd.toml" else "loopd-shim"
    where = "an absolute path, which" if how == "absolute" else "outside the settings folder, which"
    assert check(settings, home, containers=True) == [
        f"{role}: {settings / name} is a link to {target}, {where} the containers do not see"
        f" (they see the settings folder alone, at /etc/boxmaker); copy the file into {settings},"
        f" or make {name} a relative link to a file in that folder (ln -sf FILE {name}, run in it)"
    ]
    assert check(settings, home) == []  # as processes the roles read the host's files


def test_in_containers_a_relative_link_inside_the_settings_folder_is_fine(folders):
    settings, home = folders
    (settings / "profiles").mkdir()
    (settings / "memoryd.toml").rename(settings / "profiles/work.toml")
    (settings / "memoryd.toml").symlink_to("profiles/work.toml")
    _given_to_the_roles_user(settings)
    assert check(settings, home, containers=True) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="only root reads what the roles' user cannot")
def test_in_containers_a_file_the_roles_user_cannot_read_is_one_line(folders):
    """Root on the host reads any file; the role in its container is uid 10001 with no
    capability, and cannot."""
    settings, home = folders
    _given_to_the_roles_user(settings)
    (settings / "brokerd.toml").chmod(0)
    assert check(settings, home, containers=True) == [
        f"brokerd-shim: {settings / 'brokerd.toml'}: the roles' user in the containers (uid"
        " 10001) cannot read it: Permission denied; let its owner read it (chmod u+r"
        f" {settings / 'brokerd.toml'}): scripts/stack gives the folder to that user"
    ]
    assert check(settings, home) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="only root reads what the roles' user cannot")
def test_in_containers_a_grant_the_roles_user_cannot_read_is_one_line(folders):
    """A grant written as root with a private umask is valid to root's reading, while
    brokerd-shim in its container (uid 10001) cannot read it and denies every call."""
    settings, home = folders
    _given_to_the_roles_user(settings)
    grant = home / "grants/web.toml"
    grant.write_text((home / "grants/http_fetch.toml").read_text().replace("http_fetch", "web"))
    grant.chmod(0o600)
    assert check(settings, home, containers=True) == [
        f"brokerd-shim: {grant}: the roles' user in the containers (uid 10001) cannot read it:"
        " Permission denied, so brokerd-shim would deny every call; give it to that user (chown"
        f" 10001:10001 {grant})"
    ]
    os.chown(grant, 10001, 10001)
    assert check(settings, home, containers=True) == []
    assert check(settings, home) == []
