"""memoryd's configuration (spec 11): defaults, $BOXMAKER_HOME, paths next to the file, refusals."""

from pathlib import Path

import pytest

from memoryd.config import PACKAGED_SOUL, load
from memoryd.errors import ConfigError, StartFailed
from proto.server import REQUEST_TIMEOUT


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "memoryd.toml"
    path.write_text(text)
    return path


def test_defaults_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("BOXMAKER_HOME", str(tmp_path / "h"))
    cfg = load(None)
    assert cfg.home.root == tmp_path / "h"
    assert cfg.review is False and cfg.max_class == "private"
    assert cfg.loop_socket == tmp_path / "h/run/loop-memory/memory.sock"
    assert cfg.broker_socket == tmp_path / "h/run/broker-memory/memory.sock"
    assert cfg.admin_socket == tmp_path / "h/run/owner-memory/admin.sock"
    assert cfg.soul_starter == PACKAGED_SOUL and PACKAGED_SOUL.is_file()


def test_default_home_without_environment(monkeypatch):
    monkeypatch.delenv("BOXMAKER_HOME", raising=False)
    assert load(None).home.root == Path("/var/lib/boxmaker")


def test_file_values(tmp_path, monkeypatch):
    monkeypatch.delenv("BOXMAKER_HOME", raising=False)
    path = write(
        tmp_path,
        """
[paths]
home = "/srv/bx"
[memory]
soul_starter = "persona/soul.md"
review = true
[index]
max_class = "secret"
[sockets]
admin = "/run/bx/admin.sock"
""",
    )
    cfg = load(path)
    assert cfg.home.root == Path("/srv/bx")
    assert cfg.soul_starter == tmp_path / "persona/soul.md"
    assert cfg.review is True and cfg.max_class == "secret"
    assert cfg.admin_socket == Path("/run/bx/admin.sock")
    assert cfg.loop_socket == Path("/srv/bx/run/loop-memory/memory.sock")


def test_soul_starter_defaults_next_to_config(tmp_path):
    (tmp_path / "soul.md").write_text("Mine.\n")
    assert load(write(tmp_path, "")).soul_starter == tmp_path / "soul.md"


def test_soul_starter_without_one_next_to_config_is_the_packaged_one(tmp_path):
    assert load(write(tmp_path, "")).soul_starter == PACKAGED_SOUL


def test_packaged_starter_is_the_repository_starter():
    repo_starter = Path(__file__).resolve().parents[2] / "config/soul.md"
    assert PACKAGED_SOUL.read_bytes() == repo_starter.read_bytes()


@pytest.mark.parametrize(
    "text,names",
    [
        ("[memory]\nreveiw = true\n", "reveiw"),
        ("[memroy]\nreview = true\n", "memroy"),
        ("[memory]\nreview = 'yes'\n", "review"),
        ("[index]\nmax_class = 'top'\n", "max_class"),
        ("[paths]\nhome = 5\n", "home"),
        ("[paths\n", "not valid TOML"),
    ],
)
def test_refusals_name_the_problem(tmp_path, text, names):
    with pytest.raises(ConfigError) as e:
        load(write(tmp_path, text))
    assert names in str(e.value)
    assert isinstance(e.value, StartFailed)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load(tmp_path / "absent.toml")


def test_limits_default_and_from_the_file(tmp_path):
    assert load(None).limits.loop_connections == 256
    # Design 2 fixes 10 s for a whole request on every socket, as the shims have it from proto.
    assert load(None).limits.request_seconds == 10.0 == REQUEST_TIMEOUT
    cfg = load(write(tmp_path, "[limits]\nadmin_connections = 8\nreply_seconds = 2.5\n"))
    assert cfg.limits.admin_connections == 8 and cfg.limits.reply_seconds == 2.5
    assert cfg.limits.broker_connections == 256


@pytest.mark.parametrize(
    "text",
    [
        "loop_connections = 0",
        "loop_connections = 2.5",
        "loop_connections = true",
        "request_seconds = 0",
        "request_seconds = '5'",
        "reply_seconds = 100000",
        "connections = 5",
    ],
)
def test_bad_limits_are_refused(tmp_path, text):
    with pytest.raises(ConfigError, match="limits"):
        load(write(tmp_path, f"[limits]\n{text}\n"))
