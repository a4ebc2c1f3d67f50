"""A long record's snippet is a window around where it matches the query as FTS5 matched it:
folded (case, diacritics as unicode61's remove_diacritics folds them) in every mode, and stemmed
(porter) in context's and hybrid's table. Each case is checked against FTS5 itself over the same
text, in a real index file: a record FTS5 finds shows the form it was found by, and one it does not
find shows its first characters."""

import sqlite3

import pytest

from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.modes import context
from memoryd.search import schema, tokencount
from memoryd.search.defuse import escape_controls
from memoryd.search.query import ELLIPSIS, SNIPPET_LIMIT, query_terms, terms_expression
from memoryd.search.textcut import WHOLE, hit_snippet
from tests.memoryd.test_recall import user, write_log
from tests.recalling import recall_on

# About 1,000 characters, none of them a word of any query here.
PAD = " ".join(f"item{n}" for n in range(150))
SPEC = tokencount.SPEC
CONTEXT = context.LEXICAL
LEAD = 120


def _shown(text: str) -> int:
    """How many characters text takes as recall shows it (an escaped character as its escape)."""
    return len(escape_controls(text))


def _expected(text: str, window_at: str | None) -> str:
    """The snippet of a long text: a window opening LEAD characters (as shown) before window_at
    (a substring the text holds once), or its first characters when nothing matched (None)."""
    if window_at is None:
        return text[: SNIPPET_LIMIT - 1] + ELLIPSIS
    begin = text.index(window_at)
    while begin > 0 and _shown(text[begin - 1 : text.index(window_at)]) <= LEAD:
        begin -= 1
    end = begin
    while _shown(text[begin : end + 1]) <= SNIPPET_LIMIT - 2:
        end += 1
    return ELLIPSIS + text[begin:end] + ELLIPSIS


def _text(*parts: str) -> str:
    """The parts, each between two PADs: a text over the snippet's length."""
    return f" {PAD} ".join((PAD, *parts, PAD))


# (id, table, query, text, where the snippet's window opens: None for the text's start, when
# FTS5 does not find the text through a word of its own)
CASES = [
    ("diacritic", SPEC, "cafe", _text("We met at the Café Sperl."), "Café"),
    ("upper case", SPEC, "CAFE", _text("the café on the corner"), "café"),
    ("accented query", SPEC, "café", _text("CAFE opens at nine"), "CAFE"),
    ("umlaut", SPEC, "zurich", _text("a week in Zürich"), "Zürich"),
    ("two words", SPEC, "sao paulo", _text("flew to São Paulo"), "São"),
    ("capitals", SPEC, "muller", _text("ask MÜLLER first"), "MÜLLER"),
    ("acutes", SPEC, "resume", _text("send my résumé"), "résumé"),
    ("folded form first", SPEC, "cafe", _text("Café Sperl", "the cafe again"), "Café"),
    ("longer word is no match", SPEC, "cafe", _text("the cafeteria", "the Café"), "Café"),
    # remove_diacritics=1 keeps a letter with two diacritics, and unicode61 does not fold a
    # ligature: FTS5 matched only the later, plain form.
    ("two diacritics", SPEC, "uber", _text("ǖber alles", "uber later"), "uber later"),
    ("ligature", SPEC, "file", _text("the ﬁle", "the file"), "file"),
    # A character the text holds is never taken for the mark of where the match starts.
    ("mark-like character", SPEC, "cafe", _text("\U000f0000 \U000f0001 at the Café"), "Café"),
    # The spec's table does not stem.
    ("spec: no stem", SPEC, "delay", _text("it was delayed", "a short delay"), "delay "),
    ("spec: stem only", SPEC, "delay", _text("it was delayed"), None),
    ("stem", CONTEXT, "delay", _text("the launch was delayed"), "delayed"),
    ("plural", CONTEXT, "meeting", _text("two meetings today"), "meetings"),
    ("verb", CONTEXT, "launch", _text("it launches Monday"), "launches"),
    ("past tense query", CONTEXT, "moved", _text("we move soon"), "move"),
    ("stem and diacritic", CONTEXT, "cafes", _text("at the Café"), "Café"),
    ("stemmed form first", CONTEXT, "delay", _text("it was delayed", "a short delay"), "delayed"),
    # Found through its neighbours only: no word of its own matched.
    ("no word of its own", CONTEXT, "storage", _text("Thanks, sounds fine."), None),
]


@pytest.fixture
def conn(tmp_path):
    """An index file with the spec's hits and context's table, as memoryd makes them."""
    db = sqlite3.connect(tmp_path / "index.sqlite3")
    db.execute(schema.SCHEMA[0])
    db.execute(CONTEXT.create)
    yield db
    db.close()


def _found_by_fts5(conn: sqlite3.Connection, table: tokencount.Table, query: str) -> bool:
    expression = terms_expression(query_terms(query))
    rows = conn.execute(
        f"SELECT rowid FROM {table.name} WHERE {table.name} MATCH ?",  # noqa: S608 (constants)
        (f"{table.columns[0]} : ({expression})",),
    ).fetchall()
    return rows == [(1,)]


@pytest.mark.parametrize(
    ("table", "query", "text", "window_at"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_the_snippet_shows_where_fts5_matched(conn, table, query, text, window_at):
    # The snippet is cut from the spec's hits in every mode; FTS5 matched it in table.
    conn.execute("INSERT INTO hits (rowid, text) VALUES (1, ?)", (text,))
    if table is not SPEC:
        conn.execute(f"INSERT INTO {table.name} (rowid, text) VALUES (1, ?)", (text,))  # noqa: S608
    assert _found_by_fts5(conn, table, query) is (window_at is not None)
    # As spec.py calls it (its own table by default), and as context and hybrid call it.
    terms = query_terms(query)
    found = hit_snippet(conn, 1, terms) if table is SPEC else hit_snippet(conn, 1, terms, table)
    assert found == _expected(text, window_at)


@pytest.mark.parametrize("table", [SPEC, CONTEXT], ids=["spec", "context"])
def test_a_huge_record_shows_its_folded_match(conn, table):
    """A text over WHOLE bytes is searched in its first bytes only, as the same tokenizer."""
    text = _text("We met at the Café Sperl.") + "filler " * (WHOLE // 7)
    conn.execute("INSERT INTO hits (rowid, text) VALUES (1, ?)", (text,))
    found = (
        hit_snippet(conn, 1, ["cafe"]) if table is SPEC else hit_snippet(conn, 1, ["cafe"], table)
    )
    assert found == _expected(text, "Café")


@pytest.mark.parametrize(
    ("mode", "query", "shown"),
    [("spec", "cafe", "Café"), ("context", "cafe", "Café"), ("context", "delay", "delayed")],
)
def test_recall_shows_the_folded_word_that_found_a_long_record(tmp_path, mode, query, shown):
    """Each mode's hits are cut where its own table matched: context stems (porter), so its
    "delay" finds "delayed" and the snippet must show it, where the spec's would not find it."""
    home = Home(tmp_path)
    texts = [_text("We met at the Café Sperl in Vienna."), _text("The launch was delayed.")]
    write_log(home, "mm-1", [user(text) for text in texts])
    index = Index(home, mode=mode)
    index.open()
    index.catch_up_all()
    try:
        answer = recall_on(index, query, k=1, session="mm-2")
    finally:
        index.close()
    text = next(t for t in texts if shown in t)
    assert [hit.snippet for hit in answer.hits] == [_expected(text, shown)]


@pytest.mark.parametrize("mode", ["spec", "context"])
@pytest.mark.parametrize(
    ("said", "asked"),
    [
        ("We crossed the Brücke at dawn.", "Bru\u0308cke"),
        ("Flying to Việt Nam in May.", "Vie\u0323\u0302t"),
        ("The 회의 notes are in the shared folder.", "\u1112\u116c\u110b\u1174"),
    ],
    ids=["umlaut", "two marks", "hangul"],
)
def test_a_word_asked_decomposed_finds_the_record_that_holds_it_composed(
    tmp_path, mode, said, asked
):
    """A query typed in decomposed form (NFD: macOS, some input methods) asks for the same word as
    the composed text most writers store; split as typed, a combining mark cut it in two."""
    home = Home(tmp_path)
    write_log(home, "mm-1", [user(said), user("Nothing else was said that day.")])
    index = Index(home, mode=mode)
    index.open()
    index.catch_up_all()
    try:
        answer = recall_on(index, asked, k=3, session="mm-2")
    finally:
        index.close()
    # context also brings the turn beside it (its neighbour column), after it
    assert [hit.snippet for hit in answer.hits][:1] == [said]
