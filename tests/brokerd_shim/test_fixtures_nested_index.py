"""A fixture index nested past what tomllib can parse (a kilobyte of brackets) is refused like
any unreadable index: the call fails with one sentence, never an unexpected error."""

import pytest

from brokerd_shim.errors import ToolFailed
from brokerd_shim.fixtures import FixtureRuntime


@pytest.mark.parametrize(
    "text",
    [
        b"a = " + b"[" * 1000 + b"]" * 1000 + b"\n",
        b'[[fixture]]\ntool = "http_fetch\n',
    ],
)
def test_an_index_that_cannot_be_parsed_fails_the_call_in_one_sentence(tmp_path, text):
    (tmp_path / "index.toml").write_bytes(text)
    with pytest.raises(ToolFailed, match=r"\Athe fixture index index.toml cannot be read\Z"):
        FixtureRuntime(tmp_path)._index()
