"""The sentence that tells the owner to install hybrid's packages is one they can paste from any
of memoryd's outputs: bxctl escapes markup in what memoryd says, so it holds none, and it names
every package of the hybrid extra that pyproject.toml lists (and the pinned model's version)."""

import re
import tomllib
from pathlib import Path

from memoryd.modes.embed import EXTRA
from proto.escape import escape

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _extra() -> list[str]:
    with PYPROJECT.open("rb") as f:
        return tomllib.load(f)["project"]["optional-dependencies"]["hybrid"]


def test_the_install_command_is_the_same_after_bxctl_escapes_it():
    assert escape(EXTRA) == EXTRA


def test_it_names_every_package_of_the_hybrid_extra():
    command = EXTRA.split(": pip install ", 1)[1].split()
    named = {re.split(r"[=<>!~;\[ ]", word, maxsplit=1)[0] for word in command}
    wanted = {re.split(r"[=<>!~;\[ ]", req, maxsplit=1)[0] for req in _extra()}
    assert named == wanted
    for req in _extra():
        if "==" in req:
            assert req in command, req
