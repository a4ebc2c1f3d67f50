"""The reliability suite's exhaustive parts (marked slow) run only when asked for.

CI runs all of tests/, so the default run keeps a representative sweep; the exhaustive crash
sweeps and the long fuzzing run with RELIABILITY_EXHAUSTIVE=1 or with `-m slow`.
"""

import os

import pytest

EXHAUSTIVE = os.environ.get("RELIABILITY_EXHAUSTIVE") == "1"


def pytest_collection_modifyitems(config, items):
    if EXHAUSTIVE or "slow" in (config.option.markexpr or ""):
        return
    skip = pytest.mark.skip(reason="exhaustive: set RELIABILITY_EXHAUSTIVE=1 or run -m slow")
    for item in items:
        if "reliability" in item.nodeid and item.get_closest_marker("slow") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def memoryd(tmp_path_factory):
    """One memoryd process on a temporary home for the module."""
    from tests.memoryd_process import MemorydProcess

    process = MemorydProcess(tmp_path_factory.mktemp("memoryd")).start()
    yield process
    assert process.stop() == 0
