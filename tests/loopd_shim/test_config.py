"""loopd.toml: defaults, paths relative to the file, and refusals."""

from pathlib import Path

import pytest

from loopd_shim.config import load_config, read_system_prompt
from loopd_shim.errors import ConfigError


def test_defaults_without_a_config(monkeypatch, tmp_path):
    monkeypatch.setenv("BOXMAKER_HOME", str(tmp_path))
    monkeypatch.setenv("BOXMAKER_SYSTEM_PROMPT", str(tmp_path / "prompt.md"))
    config = load_config(None)
    assert config.home == tmp_path
    assert config.memory_socket == tmp_path / "run/loop-memory/memory.sock"
    assert config.broker_socket == tmp_path / "run/loop-broker/broker.sock"
    assert config.control_socket == tmp_path / "run/loop-control/control.sock"
    assert config.system_prompt == tmp_path / "prompt.md"
    assert config.sessions == tmp_path / "sessions"


def test_without_config_or_env_the_checkout_system_md(monkeypatch):
    monkeypatch.delenv("BOXMAKER_HOME", raising=False)
    monkeypatch.delenv("BOXMAKER_SYSTEM_PROMPT", raising=False)
    config = load_config(None)
    assert config.home == Path("/var/lib/boxmaker")
    assert config.system_prompt == Path(__file__).resolve().parents[2] / "config/system.md"


def test_a_config_file(tmp_path):
    path = tmp_path / "etc" / "loopd.toml"
    path.parent.mkdir()
    path.write_text(
        '[paths]\nhome = "/srv/box"\n[memory]\nsocket = "/m.sock"\n[control]\nsocket = "c.sock"\n'
    )
    config = load_config(path)
    assert config.home == Path("/srv/box")
    assert config.memory_socket == Path("/m.sock")
    assert config.control_socket == tmp_path / "etc" / "c.sock"
    assert config.broker_socket == Path("/srv/box/run/loop-broker/broker.sock")
    assert config.system_prompt == tmp_path / "etc" / "system.md"


def test_the_example_config_reads(monkeypatch, tmp_path):
    monkeypatch.setenv("BOXMAKER_HOME", str(tmp_path))
    example = Path(__file__).resolve().parents[2] / "config" / "loopd.toml"
    config = load_config(example)
    assert config.home == tmp_path
    assert config.control_socket == tmp_path / "run/loop-control/control.sock"
    assert config.system_prompt == example.parent / "system.md"
    assert "consolidate" in read_system_prompt(config.system_prompt)


@pytest.mark.parametrize(
    "text, error",
    [
        ("[paths]\nhome = 3\n", "home must be a non-empty string"),
        ("[paths]\nhoem = 'x'\n", "unknown key hoem in [paths]"),
        ("[prompts]\nsystem = 'x'\n", "unknown section [prompts]"),
        ("[paths\n", "not valid TOML"),
        ("[broker]\ntimeout_seconds = 0\n", "[broker] timeout_seconds must be a number from 1"),
        ("[broker]\ntimeout_seconds = 'x'\n", "[broker] timeout_seconds must be a number"),
    ],
)
def test_refused_configs(tmp_path, text, error):
    path = tmp_path / "loopd.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=error.replace("[", r"\[").replace("]", r"\]")):
        load_config(path)


def test_the_wait_for_brokerd(tmp_path):
    path = tmp_path / "loopd.toml"
    path.write_text("[broker]\ntimeout_seconds = 120\n")
    assert load_config(path).broker_timeout == 120.0
    path.write_text("")
    assert load_config(path).broker_timeout == 60.0


def test_missing_config(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.toml")


@pytest.mark.parametrize(
    "content, expected",
    [("Be brief.\n\n\n", "Be brief."), ("line one\nline two\n", "line one\nline two")],
)
def test_read_system_prompt(tmp_path, content, expected):
    path = tmp_path / "system.md"
    path.write_text(content)
    assert read_system_prompt(path) == expected


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_empty_system_prompt_refused(tmp_path, content):
    path = tmp_path / "system.md"
    path.write_text(content)
    with pytest.raises(ConfigError, match="empty"):
        read_system_prompt(path)
