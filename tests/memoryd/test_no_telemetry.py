"""Recall mode hybrid runs its model with onnxruntime, whose Linux builds carry a telemetry client
that, unless told not to, writes a device database under the home folder and a session file in
the temporary folder, and queues events to upload. A local memory sends nothing anywhere: the
embedder turns it off before onnxruntime is first imported, in memoryd and in its embedding
child. Checked in a fresh process, whose home and temporary folders are empty folders of the
test's own: embedding a sentence leaves both empty."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Looked for, not imported: an import here would start its telemetry in this process.
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime") is None, reason="the [hybrid] extra is not installed"
)

EMBED_ONCE = """
from memoryd.modes import embed
vectors = embed.Embedder().embed(["We adopted a puppy called Biscuit"])
assert vectors.shape == (1, embed.DIMENSIONS), vectors.shape
"""


def _files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_embedding_writes_nothing_outside_the_index(tmp_path):
    home, temp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    temp.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("ORT_DISABLE_TELEMETRY", "XDG_CACHE_HOME", "XDG_DATA_HOME")
    }
    env.update({"HOME": str(home), "TMPDIR": str(temp)})
    run = subprocess.run(
        [sys.executable, "-c", EMBED_ONCE], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert _files_under(home) == []
    assert _files_under(temp) == []
