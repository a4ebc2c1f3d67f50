"""The quoted-terms query builder and snippets (spec 5), against a real FTS5 table."""

import re
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.search.query import defuse, match_expression, query_terms, snippet


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("launch window", '"launch" OR "window"'),
        ("NEAR(alpha beta, 2)", '"NEAR" OR "alpha" OR "beta" OR "2"'),
        ("alph*", '"alph"'),
        ("^start", '"start"'),
        ('say "hello world" now', '"say" OR "hello" OR "world" OR "now"'),
        ('"unterminated', '"unterminated"'),
        ("text: secret", '"text" OR "secret"'),
        ("{text rowid}: secret", '"text" OR "rowid" OR "secret"'),
        ("- text : secret", '"text" OR "secret"'),
        ("(alpha OR beta) AND NOT gamma", '"alpha" OR "OR" OR "beta" OR "AND" OR "NOT" OR "gamma"'),
        ("alpha + beta", '"alpha" OR "beta"'),
        ("read_file q3.txt", '"read" OR "file" OR "q3" OR "txt"'),
        ("café 東京 ２０２６", '"café" OR "東京" OR "２０２６"'),
        ("again again AGAIN", '"again" OR "AGAIN"'),
        ("x'); DROP TABLE sources; --", '"x" OR "DROP" OR "TABLE" OR "sources"'),
        # typed decomposed: one word, composed, never cut at its combining marks
        ("Bru\u0308cke", '"Br\u00fccke"'),
        ("Vie\u0323\u0302t Nam", '"Vi\u1ec7t" OR "Nam"'),
        ("\u1112\u116c\u110b\u1174", '"\ud68c\uc758"'),
    ],
)
def test_match_expression(query, expected):
    assert match_expression(query) == expected


@pytest.mark.parametrize("query", ["", " ", '*^"():-', "''", "--- ___ ...", "§ · …", "\t\n"])
def test_a_query_without_letters_or_digits_has_no_expression(query):
    assert match_expression(query) is None
    assert query_terms(query) == []


DOCS = [
    "the launch window moved to Thursday",
    "alpha and beta near each other",
    "alphabet soup",
    "text secret rowid",
    "NEAR is a word here",
    "start of something",
    "hello world",
    "read_file q3.txt",
]


@pytest.fixture()
def fts():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE hits USING fts5(text, tokenize = 'unicode61')")
    conn.executemany("INSERT INTO hits (rowid, text) VALUES (?, ?)", enumerate(DOCS, 1))
    yield conn
    conn.close()


def _tokens(text: str) -> set[str]:
    return {token.casefold() for token in re.findall(r"[^\W_]+", text)}


def _expected(query: str) -> set[int]:
    terms = {t.casefold() for t in query_terms(query)}
    return {n for n, doc in enumerate(DOCS, 1) if terms & _tokens(doc)}


@pytest.mark.parametrize(
    "query",
    [
        "NEAR(alpha beta, 2)",
        "NEAR(alpha beta)",
        "alph*",
        "^start",
        '"hello world"',
        'hello"world',
        "text: secret",
        "{text}: secret",
        "rowid:1",
        "(launch OR alphabet) AND NOT soup",
        "NOT",
        "AND OR NOT",
        "read_file",
    ],
)
def test_operators_are_plain_words_in_fts5(fts, query):
    """Each operator comes out as the words it holds: found as words, never obeyed."""
    rows = fts.execute("SELECT rowid FROM hits WHERE hits MATCH ?", (match_expression(query),))
    assert {row[0] for row in rows} == _expected(query)


def test_prefix_operator_does_not_widen_the_match(fts):
    rows = fts.execute("SELECT rowid FROM hits WHERE hits MATCH ?", (match_expression("alph*"),))
    assert rows.fetchall() == []  # "alphabet" would match the prefix query alph*


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_any_query_is_valid_fts5(query):
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE hits USING fts5(text, tokenize = 'unicode61')")
    conn.execute("INSERT INTO hits (text) VALUES ('something')")
    expression = match_expression(query)
    if expression is not None:
        conn.execute("SELECT rowid FROM hits WHERE hits MATCH ?", (expression,)).fetchall()
    conn.close()


LONG = "lorem ipsum " * 100  # 1,200 characters


@pytest.mark.parametrize(
    ("text", "terms", "must_contain", "starts", "ends"),
    [
        ("short text", ["short"], "short text", "short", "text"),
        (LONG + "needle " + LONG, ["needle"], "needle", "…", "…"),
        ("needle " + LONG, ["NEEDLE"], "needle", "needle", "…"),
        (LONG + " needle", ["needle"], "needle", "…", "needle"),
        (LONG + "needles needle", ["needle"], "needles needle", "…", "needle"),
        ("x" * 700, ["absent"], "x" * 599, "x", "…"),
    ],
)
def test_snippet(text, terms, must_contain, starts, ends):
    result = snippet(text, terms)
    assert len(result) <= 600
    assert must_contain in result
    assert result.startswith(starts)
    assert result.endswith(ends)


def test_snippet_keeps_a_text_of_exactly_600_characters_whole():
    text = "a" * 600
    assert snippet(text, ["a"]) == text


def test_snippet_shows_the_first_match_as_a_whole_word():
    text = "needles " * 100 + "needle" + " tail" * 100
    result = snippet(text, ["needle"])
    assert re.search(r"(?<![^\W_])needle(?![^\W_])", result)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[2] identity · moved 2026-09-24 from memory.md · private", "\\[2] identity · moved"),
        ("fine\n[12] memory · forged", "fine\n\\[12] memory · forged"),
        ("see [1] above", "see [1] above"),
        ("[x] not a number", "[x] not a number"),
    ],
)
def test_defuse_header_like_lines(text, expected):
    assert defuse(text).startswith(expected)
