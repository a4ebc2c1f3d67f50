"""Recall mode context: neighbours, porter, stopwords, dates; spec left exactly as is;
the same index after a reindex as after catch-up; a mode switch rebuilds the mode's tables."""

import json
import logging
import random
import sqlite3

import pytest

from memoryd.config import load
from memoryd.errors import ConfigError
from memoryd.home import Home
from memoryd.index import indexer
from memoryd.index.index import Index
from memoryd.modes import recorded
from memoryd.modes.dates import date_words
from memoryd.modes.stopwords import content_terms, stopwords
from tests.memoryd.test_reindex import append, append_note, contents, random_records
from tests.recalling import recall_on


def user(time: str, text: str) -> dict:
    return {"type": "user", "time": time, "content": text}


def said(time: str, text: str) -> dict:
    return {"type": "assistant", "time": time, "content": text}


def schema(path) -> list:
    conn = sqlite3.connect(path)
    try:
        return sorted(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))
    finally:
        conn.close()


def context_contents(path) -> list:
    """The context table keyed by what its row is, not by rowid."""
    conn = sqlite3.connect(path)
    try:
        return sorted(
            conn.execute(
                "SELECT s.kind, s.session, s.record, s.role, c.text, c.near, c.date"
                " FROM context_hits c JOIN sources s ON s.rowid = c.rowid"
            ),
            key=repr,
        )
    finally:
        conn.close()


def opened(home: Home, mode: str, **kw) -> Index:
    index = Index(home, mode=mode, **kw)
    index.open()
    return index


CONVERSATION = [
    user("2023-05-08T13:56:00Z", "I finally went to the pottery class on Saturday"),
    said("2023-05-08T13:57:00Z", "How did it go? What did you make?"),
    user("2023-05-08T13:58:00Z", "A small bowl, glazed blue. It cracked in the kiln though"),
    said("2023-05-08T13:59:00Z", "That happens to everyone at first"),
    user("2023-05-08T14:00:00Z", "Anyway the weather was lovely and we walked home"),
    user("2023-06-20T09:00:00Z", "Caroline is moving to Lisbon next spring"),
    said("2023-06-20T09:01:00Z", "Is she taking the cat with her?"),
    user("2023-06-20T09:02:00Z", "Yes, both of them"),
]


@pytest.fixture
def talked(tmp_path):
    home = Home(tmp_path / "home")
    append(home, "mm-talk", CONVERSATION)
    return home


def test_the_spec_mode_index_holds_only_the_spec_tables(tmp_path, talked):
    index = opened(talked, "spec")
    index.catch_up_all()
    index.close()
    entries = schema(talked.index_db)
    tables = {name: sql for kind, name, _, sql in entries if kind == "table"}
    own = {name: sql for name, sql in tables.items() if not name.startswith("hits_")}
    assert own == dict(zip(indexer.TABLES, indexer.SCHEMA, strict=True))
    assert not [name for kind, name, _, sql in entries if kind == "index" and sql is not None]


def test_switching_back_to_spec_leaves_exactly_the_spec_schema(tmp_path, talked):
    fresh = Home(tmp_path / "fresh")
    append(fresh, "mm-talk", CONVERSATION)
    index = opened(fresh, "spec")
    index.catch_up_all()
    index.close()
    for mode in ("context", "spec"):
        index = opened(talked, mode)
        index.catch_up_all()
        index.close()
    assert schema(talked.index_db) == schema(fresh.index_db)
    assert contents(talked.index_db) == contents(fresh.index_db)


def test_a_neighbour_finds_the_turn_that_answers_without_the_subject(tmp_path, talked):
    question = "what did Caroline take to Lisbon"
    index = opened(talked, "context")
    index.catch_up_all()
    texts = [hit.snippet for hit in recall_on(index, question, k=3, session="mm-q").hits]
    index.close()
    assert "Yes, both of them" in texts  # shares no word with the question; its neighbours do
    spec_home = Home(tmp_path / "spec")
    append(spec_home, "mm-talk", CONVERSATION)
    spec = opened(spec_home, "spec")
    spec.catch_up_all()
    assert "Yes, both of them" not in [
        h.snippet for h in recall_on(spec, question, session="q").hits
    ]
    spec.close()


def test_porter_stems_and_stopwords_go(talked):
    index = opened(talked, "context")
    index.catch_up_all()
    hits = recall_on(index, "what was the glazing like", k=1, session="mm-q").hits
    assert hits[0].snippet == "A small bowl, glazed blue. It cracked in the kiln though"
    # A question of stopwords only still searches with them.
    assert recall_on(index, "what was it", k=5, session="mm-q").hits
    index.close()


def test_when_questions_meet_the_date_column(talked):
    index = opened(talked, "context")
    index.catch_up_all()
    hits = recall_on(index, "anything from June 2023", k=3, session="mm-q").hits
    assert hits and all(hit.time.startswith("2023-06") for hit in hits)
    index.close()


def test_hits_render_as_the_spec_does_and_the_log_names_the_mode(talked):
    index = opened(talked, "context")
    index.catch_up_all()
    result = recall_on(index, "kiln", k=5, session="mm-q")
    index.close()
    first = result.hits[0]
    assert first.snippet == "A small bowl, glazed blue. It cracked in the kiln though"
    assert first.tag == "memory" and first.role == "user" and first.record == 2
    assert result.text.splitlines()[0] == (
        "[1] memory · session mm-talk, 2023-05-08 13:58 UTC, the owner said · private"
    )
    (log_file,) = talked.recalls.iterdir()
    line = json.loads(log_file.read_text().splitlines()[-1])
    assert line["mode"] == "context" and line["query"] == "kiln"


def test_the_spec_log_line_has_no_mode(talked):
    index = opened(talked, "spec")
    index.catch_up_all()
    recall_on(index, "kiln", k=5, session="mm-q")
    index.close()
    (log_file,) = talked.recalls.iterdir()
    assert "mode" not in json.loads(log_file.read_text().splitlines()[-1])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_reindex_equals_incremental_indexing(tmp_path, seed):
    rng = random.Random(seed)
    home = Home(tmp_path / "home")
    index = opened(home, "context", max_class="secret")
    sessions = [f"mm-{n}" for n in range(4)]
    for step in range(8):
        for session in rng.sample(sessions, 2):
            append(home, session, random_records(rng, rng.randint(1, 12)))
            index.catch_up_session(session)
        append_note(home, step, rng)
        if step % 3 == 0:
            index.catch_up_notes()
    index.catch_up_all()
    incremental = (contents(home.index_db), context_contents(home.index_db))
    assert incremental[1]
    index.reindex()
    assert (contents(home.index_db), context_contents(home.index_db)) == incremental
    index.close()


def test_a_rewritten_log_drops_its_context_rows(talked):
    index = opened(talked, "context")
    index.catch_up_all()
    path = talked.session_log("mm-talk")
    path.write_text(json.dumps(user("2023-07-01T10:00:00Z", "only this now")) + "\n")
    index.catch_up_session("mm-talk")
    assert [row[4] for row in context_contents(talked.index_db)] == ["only this now"]
    index.close()


def test_a_mode_switch_rebuilds_from_the_spec_tables(tmp_path, talked, caplog):
    index = opened(talked, "spec")
    index.catch_up_all()
    index.close()
    caplog.set_level(logging.INFO, logger="memoryd.modes")
    index = opened(talked, "context")
    assert "recall mode context (was spec): built from 8 rows" in caplog.text
    switched = context_contents(talked.index_db)
    index.close()
    direct = Home(tmp_path / "direct")
    append(direct, "mm-talk", CONVERSATION)
    index = opened(direct, "context")
    index.catch_up_all()
    index.close()
    assert switched == context_contents(direct.index_db)
    # Opening again in the same mode rebuilds nothing.
    caplog.clear()
    opened(talked, "context").close()
    assert "recall mode" not in caplog.text


def test_a_recorded_mode_missing_its_table_is_rebuilt(talked):
    index = opened(talked, "context")
    index.catch_up_all()
    index.close()
    conn = sqlite3.connect(talked.index_db)
    conn.execute("DROP TABLE context_hits")
    conn.commit()
    conn.close()
    index = opened(talked, "context")
    assert recorded(index._write()) == "context"
    assert len(context_contents(talked.index_db)) == len(CONVERSATION)
    index.close()


def test_date_words():
    assert date_words("2023-05-08T13:56:00Z") == "Monday 8 May 2023"
    assert date_words("not a date") == ""


def test_stopwords_are_the_general_list():
    assert len(stopwords()) == 179
    assert content_terms("What did she say about the Lisbon move?") == ["say", "Lisbon", "move"]
    assert content_terms("who is she") == ["who", "is", "she"]


def test_the_mode_is_read_from_the_config(tmp_path):
    path = tmp_path / "memoryd.toml"
    path.write_text('[recall]\nmode = "context"\n')
    assert load(path).recall_mode == "context"
    path.write_text("")
    assert load(path).recall_mode == "spec"
    path.write_text('[recall]\nmode = "fuzzy"\n')
    with pytest.raises(ConfigError, match=r"\[recall\] mode must be one of spec, context, hybrid"):
        load(path)


def test_an_unknown_mode_is_refused(tmp_path):
    with pytest.raises(ValueError):
        Index(Home(tmp_path / "h"), mode="fuzzy")
