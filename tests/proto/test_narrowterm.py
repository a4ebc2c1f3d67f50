"""A terminal whose locale is narrower than the memory (Latin-1, ASCII): every command that prints
memory text writes escapes for what the encoding cannot hold, never a traceback."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from proto.narrowterm import ERRORS

WIDE = "The meeting (\u4f1a\u8b70) moved to Thursday \U0001f5d3."
SHOWN = "The meeting (\\u{4F1A}\\u{8B70}) moved to Thursday \\u{1F5D3}."


def run_main(module: str, *argv: str, encoding: str, home: Path):
    environ = {
        **os.environ,
        "BOXMAKER_HOME": str(home),
        "PYTHONPATH": os.pathsep.join(sys.path),
        "PYTHONIOENCODING": encoding,
    }
    return subprocess.run(
        [sys.executable, "-c", f"from {module} import main; main()", *argv],
        capture_output=True,
        env=environ,
        timeout=60,
    )


def test_the_handler_writes_what_the_encoding_lacks_as_escape_writes_it():
    out = io.TextIOWrapper(io.BytesIO(), encoding="latin-1", errors=ERRORS, write_through=True)
    out.write("café " + WIDE)
    assert out.buffer.getvalue().decode("latin-1") == "café " + SHOWN  # type: ignore[attr-defined]


# (click writes UTF-8 itself where the locale says ASCII, so an ASCII locale shows no escape)
@pytest.mark.parametrize(
    ("encoding", "shown"),
    [("latin-1", SHOWN), ("euc-jp", "The meeting (\u4f1a\u8b70) moved to Thursday \\u{1F5D3}.")],
)
def test_loopd_shim_baseline_prints_a_prompt_the_locale_cannot_show(tmp_path, encoding, shown):
    folder = tmp_path / "sessions" / "s1"
    folder.mkdir(parents=True, mode=0o700)
    (folder / "0.baseline.json").write_text(json.dumps({"system": WIDE, "tools": []}))
    result = run_main("loopd_shim.cli", "baseline", "s1", encoding=encoding, home=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr == b""
    assert result.stdout.decode(encoding) == shown + "\n"


def test_memory_mcp_prints_a_home_the_locale_cannot_show(tmp_path):
    home = tmp_path / "\u4f1a\u8b70"
    home.mkdir(mode=0o700)
    argv = ("trust-again", "--client", "c", "--home", str(home), "--state", str(tmp_path / "st"))
    result = run_main("memory_mcp.cli", *argv, encoding="ascii", home=home)
    assert result.returncode == 0, result.stderr.decode()
    assert b"Traceback" not in result.stderr
    assert "\\u{4F1A}\\u{8B70}" in result.stdout.decode("ascii")
