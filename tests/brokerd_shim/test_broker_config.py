"""brokerd.toml: defaults, relative paths, and refusals that name the cause."""

from pathlib import Path

import pytest

from brokerd_shim.config import load_config
from brokerd_shim.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def test_defaults_from_the_environment():
    config = load_config(None, {"BOXMAKER_HOME": "/srv/bm"})
    assert config.home == Path("/srv/bm")
    assert config.broker_socket == Path("/srv/bm/run/loop-broker/broker.sock")
    assert config.memory_socket == Path("/srv/bm/run/broker-memory/memory.sock")
    assert config.grants_dir == Path("/srv/bm/grants")
    assert config.fixtures_dir == Path("/srv/bm/fixtures")
    assert config.memory_timeout == 30.0
    assert load_config(None, {}).home == Path("/var/lib/boxmaker")


def test_the_example_config():
    config = load_config(REPO / "config" / "brokerd.toml", {"BOXMAKER_HOME": "/srv/bm"})
    assert config.home == Path("/srv/bm")
    assert config.grants_dir == Path("/srv/bm/grants")
    assert config.fixtures_dir == Path("/srv/bm/fixtures")
    assert config.memory_timeout == 30.0


def test_every_key(tmp_path):
    path = tmp_path / "b.toml"
    path.write_text(
        '[paths]\nhome = "h"\n[broker]\nsocket = "/s/b.sock"\n'
        '[memory]\nsocket = "m.sock"\ntimeout_seconds = 0.5\n'
        '[grants]\ndir = "/g"\n[fixtures]\ndir = "fx"\n'
    )
    config = load_config(path, {"BOXMAKER_HOME": "/ignored"})
    assert config.home == tmp_path / "h"
    assert config.broker_socket == Path("/s/b.sock")
    assert config.memory_socket == tmp_path / "m.sock"
    assert config.memory_timeout == 0.5
    assert config.grants_dir == Path("/g")
    assert config.fixtures_dir == tmp_path / "fx"
    assert config.ledger_dir == tmp_path / "h" / "ledger"
    assert config.audit_dir == tmp_path / "h" / "audit"


@pytest.mark.parametrize(
    "text, says",
    [
        ("[paths\n", "not valid TOML"),
        ("[sockets]\nbroker = 'x'\n", "unknown section [sockets]"),
        ("[memory]\nsokcet = 'x'\n", "unknown key sokcet in [memory]"),
        ("paths = 1\n", "paths must be a table"),
        ("[paths]\nhome = 3\n", "[paths] home must be a non-empty string"),
        ('[paths]\nhome = "/h\\u0000x"\n', "[paths] home must not hold a NUL character"),
        ("[memory]\ntimeout_seconds = 'soon'\n", "must be a number"),
        ("[memory]\ntimeout_seconds = 0\n", "above 0"),
        ("[memory]\ntimeout_seconds = true\n", "must be a number"),
        ("[memory]\ntimeout_seconds = nan\n", "above 0"),
    ],
)
def test_refusals(tmp_path, text, says):
    path = tmp_path / "b.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=None) as caught:
        load_config(path, {})
    assert says in str(caught.value)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "none.toml", {})
