"""The baseline stays at 3,000 tokens or less (spec 1, item 5), counted with o200k_base.

Both cases of bench/tokens.py: the starter soul.md with memory.md and user.md empty, and every
memory file at its limit. The baseline is what loopd-shim saves for a new session (system.md, a
blank line, memoryd's rendered block) plus the five tool schemas.
"""

import importlib.util
import tempfile
from pathlib import Path

import pytest

from memoryd.memory.entries import LIMITS

BENCH = Path(__file__).resolve().parents[2] / "bench" / "tokens.py"
_spec = importlib.util.spec_from_file_location("bench_tokens", BENCH)
tokens = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tokens)

BUDGET = 3_000


@pytest.fixture(scope="module")
def baselines():
    saved = {}
    for case, files in (("starter", None), ("full", tokens.full_files())):
        with tempfile.TemporaryDirectory(prefix="tokens-") as root:
            saved[case] = tokens.saved_baseline(Path(root), files)
    return saved


def test_every_file_is_at_its_limit_in_the_full_case(baselines):
    files = tokens.full_files()
    assert len(files["soul.md"].strip()) == LIMITS["soul.md"]
    system = baselines["full"]["system"]
    assert "# memory.md (2,200 of 2,200 characters)" in system
    assert "# user.md (1,375 of 1,375 characters)" in system
    assert files["soul.md"].strip() in system
    for name in ("memory.md", "user.md"):
        entries = [e.strip() for e in files[name].split("\n§\n")]
        assert len(set(entries)) == len(entries) > 10
        assert all(entry in system for entry in entries)


def test_starter_case_is_the_starter_soul_and_empty_files(baselines):
    system = baselines["starter"]["system"]
    assert tokens.SOUL_STARTER.read_text(encoding="utf-8").strip() in system
    assert "# memory.md (0 of 2,200 characters)\n(empty)" in system
    assert "# user.md (0 of 1,375 characters)\n(empty)" in system


@pytest.mark.parametrize("case", ["starter", "full"])
def test_baseline_within_budget(baselines, case):
    figures = tokens.count_tokens(baselines[case])
    assert figures["tools"] > 0 and figures["system"] > 0
    assert figures["total"] <= BUDGET, f"{case} baseline is {figures['total']} tokens"


@pytest.mark.parametrize("script", sorted(tokens.tokens_scripts.MEMORY))
def test_each_script_is_measured_with_its_files_at_their_limits_and_whole(script):
    """The per-script figures (bench/tokens.py) are of memory.md and user.md at their limits in
    that script, every entry of them in the block (none left out as a repeat)."""
    files = tokens.script_files(script)
    with tempfile.TemporaryDirectory(prefix="tokens-") as root:
        system = tokens.saved_baseline(Path(root), files)["system"]
    assert "# memory.md (2,200 of 2,200 characters)" in system
    assert "# user.md (1,375 of 1,375 characters)" in system
    for name in ("memory.md", "user.md"):
        entries = [e.strip() for e in files[name].split("\n§\n")]
        assert len(set(entries)) == len(entries) > 10
        assert all(entry in system for entry in entries)
    assert tokens.chars_per_token(files) < tokens.chars_per_token(tokens.full_files())
