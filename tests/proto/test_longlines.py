"""proto.longlines and read_records' max_line: a long line is read in chunks and kept small."""

import json

from hypothesis import given
from hypothesis import strategies as st

from proto.errors import RecordDamaged
from proto.longlines import LineShrinker, safe_prefix
from proto.records import read_records

_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=80),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _shrink(data: bytes, keep: int, chunk: int) -> LineShrinker:
    shrinker = LineShrinker(keep, limit=1 << 20)
    for at in range(0, len(data), chunk):
        shrinker.feed(data[at : at + chunk])
    return shrinker


def _pairs(data: bytes):
    return json.loads(data, object_pairs_hook=list)


def _same_shape(kept, whole, keep: int, ascii_only: bool) -> None:
    """Every string of kept starts whole's, and is all of it when it fits in keep bytes."""
    if isinstance(whole, str):
        assert isinstance(kept, str) and whole.startswith(kept)
        if len(json.dumps(whole, ensure_ascii=ascii_only).encode()) - 2 <= keep:
            assert kept == whole
    elif isinstance(whole, list | tuple):
        assert isinstance(kept, list | tuple) and len(kept) == len(whole)
        for k, w in zip(kept, whole, strict=True):
            _same_shape(k, w, keep, ascii_only)
    else:
        assert kept == whole


@given(_values, st.integers(0, 40), st.integers(1, 50), st.booleans())
def test_a_shrunk_line_is_valid_json_with_each_string_a_prefix(value, keep, chunk, ascii_only):
    data = json.dumps(value, ensure_ascii=ascii_only).encode()
    kept = _shrink(data, keep, chunk).result()
    # Parses: never a partial escape, UTF-8 character or surrogate pair; no lone surrogate.
    json.dumps(json.loads(kept), ensure_ascii=False).encode("utf-8")
    _same_shape(_pairs(kept), _pairs(data), keep, ascii_only)


@given(st.text(max_size=60), st.integers(0, 70), st.booleans())
def test_safe_prefix_of_any_cut_parses(text, cut, ascii_only):
    raw = json.dumps(text, ensure_ascii=ascii_only).encode()[1:-1]
    kept = json.loads(b'"' + safe_prefix(raw[:cut]) + b'"')
    assert text.startswith(kept)
    kept.encode("utf-8")


def test_escaped_quotes_and_backslash_runs_across_chunks():
    value = {"a": 'x\\"y\\\\' * 50 + '"', "b": "short"}
    data = json.dumps(value).encode()
    for chunk in (1, 2, 3, 7):
        assert json.loads(_shrink(data, 10_000, chunk).result()) == value


def _user_line(content: str) -> bytes:
    body = {"type": "user", "time": "2026-09-20T14:02:11Z", "content": content}
    return (json.dumps(body) + "\n").encode()


def test_read_records_cuts_a_long_line_and_goes_on(tmp_path):
    log = tmp_path / "0.jsonl"
    big = "word " * 400_000  # 2 MB
    log.write_bytes(_user_line("first") + _user_line(big) + _user_line("third"))
    lines = list(read_records(log, max_line=100_000, keep=1000))
    assert [line.number for line in lines] == [0, 1, 2]
    assert not lines[0].cut and lines[1].cut and not lines[2].cut
    assert lines[1].record.content == big[:1000]
    assert lines[2].record.content == "third"
    assert lines[2].end == log.stat().st_size  # byte spans are those on disk
    assert lines[2].start == lines[1].end


def test_read_records_without_max_line_reads_whole_lines(tmp_path):
    log = tmp_path / "0.jsonl"
    big = "word " * 50_000
    log.write_bytes(_user_line(big))
    (line,) = read_records(log)
    assert line.record.content == big and not line.cut


def test_a_long_last_line_without_newline_is_still_being_written(tmp_path):
    log = tmp_path / "0.jsonl"
    log.write_bytes(_user_line("first") + _user_line("x" * 300_000)[:-1])
    assert [line.number for line in read_records(log, max_line=1000, keep=100)] == [0]


def test_a_long_damaged_line_is_damage(tmp_path):
    log = tmp_path / "0.jsonl"
    log.write_bytes(b'{"type": "user", "content": "' + b"x" * 300_000 + b"\n")
    try:
        list(read_records(log, max_line=1000, keep=100))
    except RecordDamaged as damage:
        assert damage.line == 0
    else:
        raise AssertionError("not damage")


def test_a_kept_string_longer_than_the_structure_limit_is_not_refused():
    shrinker = LineShrinker(keep=1 << 20, limit=1 << 10)
    line = json.dumps({"type": "user", "content": "x" * 600_000}).encode()
    for start in range(0, len(line), 4096):
        shrinker.feed(line[start : start + 4096])
    assert not shrinker.too_large
    assert json.loads(shrinker.result()) == json.loads(line)


def test_structure_past_the_limit_is_refused():
    shrinker = LineShrinker(keep=16, limit=1 << 10)
    shrinker.feed(json.dumps([1] * 2_000).encode())
    assert shrinker.too_large


def test_held_limit_bounds_the_kept_strings_too():
    line = json.dumps(["s" * 300] * 5_000).encode()  # 1.5 MB kept at keep 300; 15 kB structure
    bounded = _shrink_with(line, LineShrinker(keep=300, limit=1 << 20, held_limit=1 << 20))
    unbounded = _shrink_with(line, LineShrinker(keep=300, limit=1 << 20))
    assert bounded.too_large and not unbounded.too_large
    assert json.loads(unbounded.result()) == json.loads(line)


def _shrink_with(line: bytes, shrinker: LineShrinker) -> LineShrinker:
    for start in range(0, len(line), 4096):
        shrinker.feed(line[start : start + 4096])
    return shrinker


@given(
    st.lists(st.sampled_from(['"', "\\", "x", "\\\\", '\\"', "é", "\n"]), max_size=400),
    st.integers(1, 300),
)
def test_strings_dense_with_escapes_end_where_json_says(parts, chunk):
    """Runs of backslashes and escaped quotes of any length, across chunks and windows."""
    value = {"a": "".join(parts), "b": ["".join(reversed(parts)), "end"]}
    data = json.dumps(value, ensure_ascii=False).encode()
    assert json.loads(_shrink(data, 10_000, chunk).result()) == value
