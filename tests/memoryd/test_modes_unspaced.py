"""Recall mode context finds a word said inside a sentence of a script written without spaces
(Japanese, Chinese, Thai): its table holds such runs as bigrams and splits the question the same
way; the spec's mode is left as the spec has it (a run of ideographs is one token); English text
is held as it is; a context index of the format before has its table built again once."""

import logging
import sqlite3

import pytest

from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.index.settings import FORMAT
from memoryd.modes import context, unspaced
from memoryd.search import schema
from memoryd.search.query import Query
from tests.memoryd.test_modes_context import said, user
from tests.memoryd.test_reindex import append
from tests.recalling import recall_on

JAPANESE = "会議は木曜日に移動しました。"
CHINESE = "我们的会议改到星期四下午三点了。"
THAI = "ร้านกาแฟเปิดวันพฤหัสบดี"
LONG = "月曜日は休みです。" + "今日は天気が良いので散歩した。" * 60 + "来月は東京へ出張する。"
SAID = [
    user("2024-03-04T09:00:00Z", JAPANESE),
    said("2024-03-04T09:01:00Z", "了解しました。"),
    user("2024-03-04T09:02:00Z", CHINESE),
    said("2024-03-04T09:03:00Z", "好的。"),
    user("2024-03-04T09:04:00Z", "Unrelated chatter about the garden and the roses."),
    said("2024-03-04T09:05:00Z", "Nice, they must smell lovely."),
    user("2024-03-04T09:06:00Z", THAI),
    said("2024-03-04T09:07:00Z", "ok"),
    user("2024-03-04T09:08:00Z", LONG),
]
# A word inside each sentence, and the sentence that says it.
WORDS = [
    ("木曜日", JAPANESE),  # Thursday
    ("会議", JAPANESE),  # meeting
    ("移動", JAPANESE),  # moved
    ("星期四", CHINESE),  # Thursday
    ("会议", CHINESE),  # meeting
    ("พฤหัสบดี", THAI),  # Thursday
    ("กาแฟ", THAI),  # coffee
    ("東京", LONG),  # Tokyo, said at the end of a long turn
    ("会議はいつですか", JAPANESE),  # "when is the meeting?"
]


def opened(home: Home, mode: str) -> Index:
    index = Index(home, mode=mode)
    index.open()
    index.catch_up_all()
    return index


@pytest.fixture
def home(tmp_path) -> Home:
    found = Home(tmp_path / "home")
    append(found, "mm-talk", SAID)
    return found


@pytest.mark.parametrize(("word", "sentence"), WORDS)
def test_context_finds_a_word_said_inside_a_sentence(home, word, sentence):
    index = opened(home, "context")
    try:
        hits = recall_on(index, word, k=3, session="mm-q").hits
    finally:
        index.close()
    # Among the first three (context may rank a short neighbour above: its neighbour column
    # holds the word, as it does for English text).
    shown = [hit.snippet for hit in hits]
    assert sentence in shown or (sentence == LONG and any(word in text for text in shown)), shown


def test_a_character_that_is_a_word_alone_is_found(home):
    index = opened(home, "context")
    try:
        hits = recall_on(index, "散歩", k=1, session="mm-q").hits
        alone = recall_on(index, "星", k=1, session="mm-q").hits
    finally:
        index.close()
    assert hits and "散歩" in hits[0].snippet
    assert alone and alone[0].snippet == CHINESE


def test_the_snippet_of_a_long_turn_shows_the_word_found(home):
    """The table holds the text as bigrams; the snippet is cut where they matched, in the
    record's own text."""
    index = opened(home, "context")
    try:
        hits = recall_on(index, "東京", k=1, session="mm-q").hits
    finally:
        index.close()
    assert hits[0].snippet.startswith("…") and "東京へ出張" in hits[0].snippet


def test_the_spec_mode_keeps_the_spec_tokenizer(home):
    """The spec fixes unicode61: a run of ideographs is one token, found only whole."""
    index = opened(home, "spec")
    try:
        inside = recall_on(index, "木曜日", k=3, session="mm-q")
        whole = recall_on(index, JAPANESE, k=3, session="mm-q").hits
    finally:
        index.close()
    assert inside.hits == [] and "no matches" in inside.text
    assert [hit.snippet for hit in whole] == [JAPANESE]
    conn = sqlite3.connect(home.index_db)
    try:
        (hits_sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'hits'").fetchone()
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()
    assert hits_sql == schema.SCHEMA[0] and "context_hits" not in tables


def test_english_text_is_held_as_it_is(home):
    index = opened(home, "context")
    index.close()
    conn = sqlite3.connect(home.index_db)
    try:
        rows = dict(
            conn.execute(
                "SELECT h.text, c.text FROM context_hits c JOIN hits h ON h.rowid = c.rowid"
            )
        )
    finally:
        conn.close()
    english = "Unrelated chatter about the garden and the roses."
    assert rows[english] == english
    assert rows[JAPANESE] != JAPANESE and " 木曜 曜日 " in rows[JAPANESE]


def test_a_context_index_of_the_format_before_is_built_again_with_bigrams(home, caplog):
    index = opened(home, "context")
    index.close()
    conn = sqlite3.connect(home.index_db)
    with conn:
        conn.execute("UPDATE settings SET value = ? WHERE name = 'format'", (str(FORMAT - 1),))
        # As format 4 held it: each run whole.
        conn.execute(
            "UPDATE context_hits SET text = (SELECT h.text FROM hits h"
            " WHERE h.rowid = context_hits.rowid), near = ''"
        )
    conn.close()
    with caplog.at_level(logging.INFO):
        index = opened(home, "context")
    try:
        hits = recall_on(index, "星期四", k=1, session="mm-q").hits
    finally:
        index.close()
    assert "context_hits built again from its rows" in caplog.text
    assert "rebuilding it" not in caplog.text
    assert hits and hits[0].snippet == CHINESE


def test_the_text_map_points_at_where_each_piece_comes_from():
    for text in (JAPANESE, CHINESE, THAI, "2時半にNASへ", "회의는 목요일로", "plain"):
        held, where = unspaced.spaced(text)
        if where is None:
            assert held == text
            continue
        assert len(where) == len(held)
        for at, char in enumerate(held):
            if char != " " and held[at - 1] == " ":  # a piece starts where its first character is
                assert text[where[at]] == char
    assert unspaced.query_text("木曜日") == " 木曜 曜日 "
    assert unspaced.query_text("猫") == " 猫 "
    assert unspaced.query_text("plain words") == "plain words"


def test_a_long_question_is_searched_for_its_first_pieces(home):
    """Each bigram is a term of context's exact ranking: a pasted paragraph is searched for its
    first QUERY_PIECES different ones, and still finds what it names first."""
    question = "星期四的会议" + "".join(chr(0x4E00 + n * 7) for n in range(400))
    terms = context.query_terms(Query.parse(question))
    assert len(terms) == unspaced.QUERY_PIECES and terms[:2] == ["星期", "期四"]
    index = opened(home, "context")
    try:
        hits = recall_on(index, question, k=3, session="mm-q").hits
    finally:
        index.close()
    assert CHINESE in [hit.snippet for hit in hits]
