"""brokerd-shim reads every audit month at start: a month holding a long stretch with no line end
(a sparse or damaged file) is scanned as it comes, never gathered whole. Start stays bounded, the
session names on either side of the stretch and inside it are still taken (a session too many
fails closed), and one line names the file."""

import logging
import os
import tracemalloc

from brokerd_shim.audit import CHUNK, sessions_answered


def line(session: str) -> bytes:
    return b'{"time":"t","session":"%s","call_id":"c","tool":"recall"}\n' % session.encode()


def test_a_stretch_with_no_line_end_is_scanned_in_bounded_memory(tmp_path, caplog):
    path = tmp_path / "2026-12.jsonl"
    with open(path, "wb") as f:
        f.write(line("mm-before1"))
        # A session field the first chunk's end cuts in two, deep in the stretch.
        field = b'"session":"mm-inside1"'
        f.seek(CHUNK - len(field) // 2)
        f.write(field)
        f.seek(16 * CHUNK)  # sparse: NUL bytes, no line end, on no disk
        f.write(b"\n" + line("mm-after01"))
    tracemalloc.start()
    try:
        with caplog.at_level(logging.WARNING):
            found = sessions_answered(tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found == {"mm-before1", "mm-inside1", "mm-after01"}
    assert peak < 4 * CHUNK, f"{peak:,} bytes held for a {os.path.getsize(path):,} byte file"
    named = [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]
    assert len(named) == 1
    assert "1 stretch(es) of over" in named[0]


def test_a_month_of_whole_lines_says_nothing(tmp_path, caplog):
    (tmp_path / "2026-11.jsonl").write_bytes(line("mm-whole01") * 1000)
    with caplog.at_level(logging.WARNING):
        assert sessions_answered(tmp_path) == {"mm-whole01"}
    assert caplog.text == ""
