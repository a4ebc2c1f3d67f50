"""A recall snippet is at most 600 characters as the reader gets it, escapes counted (spec 5).

Session records are not checked, so one can hold tag characters (U+E0000..U+E007F, as "ASCII
smuggling" strings use), NULs or any other character that recall shows as an escape of up to ten
characters. The window is measured as shown, so the snippet stays within 600 characters and keeps
its match; it is cut at a character of the text, never inside an escape, with its ellipsis. Checked
on the answer as each recall mode gives it, and on bxctl memory search's, which is escaped once.
"""

import re
from pathlib import Path

import pytest

from bxctl.common import escape_ids
from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.owner import search as owner_search
from memoryd.recall.recaller import Recaller
from memoryd.search import defuse as defusing
from memoryd.search.defuse import defuse, escape_controls
from memoryd.search.query import ELLIPSIS, SNIPPET_LIMIT, snippet
from proto.records import UserRecord, append_session_record
from tests.recalling import recall_on

TAG_A = "\U000e0041"
RECORDS = [
    "tangerine " + TAG_A * 700,  # the auditor's record: 710 characters, 5,312 once escaped
    "\x00" * 300 + " tangerine " + "\x00" * 300,  # NULs before the match too: it must stay shown
    TAG_A * 130 + " tangerine " + "\U0010fffd" * 90 + " end",  # a window that reaches the end
    "\n".join(f"[{n}] tangerine" for n in range(60)),  # a backslash for each header-like line
]
ESCAPE_CUT = re.compile(r"\\(x[0-9a-f]?|u(\{[0-9A-F]*)?)$")

MODES = ["spec", "context", pytest.param("hybrid", marks=pytest.mark.slow)]


def _home(root: Path, texts: list[str]) -> Home:
    home = Home(root)
    folder = home.sessions / "mm-1"
    folder.mkdir(parents=True)
    for n, text in enumerate(texts):
        record = UserRecord(time=f"2026-09-24T21:02:{n:02d}Z", content=text)
        append_session_record(folder / "0.jsonl", record)
    return home


def _snippets(answer: str, headers: list[str]) -> list[str]:
    """The snippets of a recall answer, each the text between its header line and the next."""
    lines = answer.split("\n")
    starts = [lines.index(header) for header in headers]
    ends = [*starts[1:], len(lines)]
    return ["\n".join(lines[start + 1 : end]) for start, end in zip(starts, ends, strict=True)]


def _check_shown(shown: str) -> None:
    assert len(shown) <= SNIPPET_LIMIT, (len(shown), shown[:80])
    assert "tangerine" in shown, shown[:200]
    if shown.endswith(ELLIPSIS):
        assert ESCAPE_CUT.search(shown[: -len(ELLIPSIS)]) is None, shown[-40:]


@pytest.mark.parametrize("mode", MODES)
def test_every_recalled_snippet_is_at_most_600_characters_as_the_model_reads_it(tmp_path, mode):
    if mode == "hybrid":
        pytest.importorskip("onnxruntime")
    index = Index(_home(tmp_path, RECORDS), mode=mode)
    index.open()
    try:
        index.catch_up_all()
        result = recall_on(index, "tangerine", 10, session="mm-2")
    finally:
        index.close()
    assert len(result.hits) == len(RECORDS), result.text
    headers = [hit.header(n) for n, hit in enumerate(result.hits, 1)]
    shown = _snippets(result.text, headers)
    for one in shown:
        _check_shown(one)
    # Cut, but as long as the bound allows: the tag record's snippet is not cut short.
    tags = next(s for s in shown if s.startswith("tangerine \\u{E0041}"))
    assert len(tags) > SNIPPET_LIMIT - 10


def test_the_owners_search_is_cut_alike_and_escaped_once(tmp_path):
    home = _home(tmp_path, [*RECORDS, "tangerine \x1b]0;title\x07 " + "x" * 700])
    index = Index(home)
    index.open()
    recaller = Recaller(index)
    try:
        index.catch_up_all()
        text = owner_search.answer(recaller, "tangerine", 10, as_json=False)
    finally:
        recaller.close()
        index.close()
    printed = escape_ids(text)  # as bxctl prints it
    assert "tangerine \\x1b\\]0;title\\x07 xxx" in printed, printed
    assert "\\\\x1b" not in printed and "\\\\u{E0041}" not in printed
    snippets = [line[4:] for line in text.split("\n") if line.startswith("    ")]
    assert any(s.startswith("tangerine " + TAG_A) for s in snippets), text[:300]
    for one in snippets:
        assert len(escape_controls(one)) <= SNIPPET_LIMIT, len(escape_controls(one))


def test_ordinary_text_is_cut_as_before():
    """A text of ordinary characters is measured by its length: its snippet is what the rule
    gave before escapes were counted, to the character, and recall shows it unchanged."""
    words = " ".join(f"word{n} café 東京 🎉" for n in range(200))
    text = words + " tangerine\r\n" + words
    at = text.index("tangerine")
    expected = ELLIPSIS + text[at - 120 : at - 120 + SNIPPET_LIMIT - 2] + ELLIPSIS
    assert snippet(text, ["tangerine"]) == expected
    assert defusing.defuse_within(expected, SNIPPET_LIMIT) == defuse(expected)
    short = text[:SNIPPET_LIMIT].strip()
    assert snippet(short, ["tangerine"]) == short


def test_a_cut_never_splits_an_escape():
    for pad in range(12):
        text = "x" * pad + TAG_A * 100 + "\x00" * 100
        for limit in range(40, 80):
            out = defusing.defuse_within(text, limit)
            assert len(out) <= limit
            assert out.endswith(ELLIPSIS)
            assert ESCAPE_CUT.search(out[: -len(ELLIPSIS)]) is None, (pad, limit, out)
