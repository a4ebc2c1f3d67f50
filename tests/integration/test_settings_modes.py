"""A recall mode chosen in the host's settings folder runs in the containers, end to end.

The image carries every extra the settings can ask for, so `[recall] mode = "context"` or
`"hybrid"` in memoryd.toml (mounted read-only at /etc/boxmaker) is all it takes: memoryd builds
the mode's tables at start, a fact told in one session is recalled in another through the three
roles, the recall log line names the mode, and under hybrid the model embeds the records inside
memoryd's container (its vectors appear in the index).
"""

import json
import sqlite3
import time

import pytest

from tests.integration.container_stack import ContainerStack
from tests.integration.stack import CONFIG_DIR, short_temp_home

pytestmark = pytest.mark.container


def with_mode(mode: str) -> dict[str, str]:
    text = (CONFIG_DIR / "memoryd.toml").read_text()
    assert "\n[recall]" not in text  # the example leaves the mode to its default
    return {"memoryd.toml": f'{text}\n[recall]\nmode = "{mode}"\n'}


def ok(result):
    assert result.returncode == 0, f"exit {result.returncode}: {result.stdout}{result.stderr}"
    return result.stdout


def vectors(index) -> tuple[int, int]:
    """(vectors made, records still waiting for theirs), read without writing."""
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=10)
    try:
        made = conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
        waiting = conn.execute("SELECT count(*) FROM vector_pending").fetchone()[0]
    finally:
        conn.close()
    return made, waiting


def told_and_recalled(stack, mode: str) -> None:
    ok(stack.driver("start", "--session", f"{mode}-told"))
    ok(stack.driver("say", f"{mode}-told", "The launch window moved to Thursday."))
    ok(stack.driver("answer", f"{mode}-told", "Noted, Thursday."))
    ok(stack.driver("start", "--session", f"{mode}-asks"))
    call = "recall " + json.dumps({"query": "when is the launch window"})
    out = ok(stack.driver("answer", f"{mode}-asks", "--call", call))
    assert f"memory · session {mode}-told" in out and "Thursday" in out, out
    lines = [
        json.loads(line)
        for path in sorted((stack.home / "memory/recalls").glob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]
    assert lines and lines[-1].get("mode") == mode, lines[-1:]


@pytest.fixture(
    params=[
        pytest.param(("context", "container"), id="context-default-engine"),
        pytest.param(("hybrid", "container"), id="hybrid-default-engine"),
        pytest.param(("hybrid", "rootless"), id="hybrid-rootless"),
    ]
)
def mode_stack(request):
    mode, which = request.param
    engine = request.getfixturevalue(f"{which}_engine")
    stack = ContainerStack(short_temp_home(f"bx-{mode}-"), engine, settings=with_mode(mode))
    try:
        stack.start()
        stack.wait_ready(timeout=120)
        yield mode, stack
    finally:
        stack.stop()


def test_a_recall_mode_from_the_settings_runs_in_the_containers(mode_stack):
    mode, stack = mode_stack
    assert f"recall mode {mode} (a new file)" in stack.logs()
    told_and_recalled(stack, mode)
    if mode == "hybrid":
        index = stack.home / "index/memory.sqlite3"
        deadline = time.monotonic() + 180
        while (state := vectors(index))[0] == 0 or state[1] != 0:
            assert time.monotonic() < deadline, f"no vectors made in memoryd's container: {state}"
            time.sleep(1)
        assert "embedding paused" not in stack.logs()
