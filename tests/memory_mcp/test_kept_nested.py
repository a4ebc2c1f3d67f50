"""A client's kept state damaged into JSON nested past the parser's depth, under the file's byte
cap, counts untrusted and secret like any other kept file that cannot be read (the client's call
goes on), with its one line naming the file, never a traceback."""

import logging

from memory_mcp import raised


def test_a_kept_file_nested_too_deep_counts_untrusted_and_secret(tmp_path, caplog):
    path = tmp_path / "desk.path-0123456789abcdef.json"
    path.write_text('{"class": ' + "[" * 1500 + "]" * 1500 + "}")  # 3 KB: under the cap
    assert path.stat().st_size <= raised.MOST_BYTES
    with caplog.at_level(logging.WARNING):
        found = raised.load(path)
    assert found is not None and found.label == raised.WORST
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and str(path) in said[0] and "damaged" in said[0]
