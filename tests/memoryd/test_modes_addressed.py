"""A question that names one of the two speakers favours that speaker's rows: the speaker is
known by how the other one addresses them, a name only spoken about favours nothing, and the
spec mode is left as it is."""

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.data import purge
from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.modes import addressed
from memoryd.modes.arrange import Place
from memoryd.search.schema import SCHEMA
from tests.memoryd.test_modes_context import said, user
from tests.memoryd.test_reindex import append
from tests.recalling import recall_on


@pytest.mark.parametrize(
    ("text", "addresses"),
    [
        ("Hey Dana! Good to see you", True),
        ("Thanks, Dana.", True),
        ("Wow Dana, that is great", True),
        ("That is great, Dana!", True),
        ("Dana, look at this", True),
        ("So proud of you. Dana, keep going", True),
        ("oh thanks Dana for the tip", True),
        ("I met Dana at work", False),
        ("Dana went home early.", False),
        ("dana, hi", False),  # a name is written capitalised
        ("Hi Danae!", False),  # another name
        ("The Dana Point trip", False),
    ],
)
def test_an_address_is_told_from_a_mention(text, addresses):
    assert bool(addressed.address("Dana").search(text)) is addresses


def _table() -> sqlite3.Connection:
    """The spec's hits and sources, in memory."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    for statement in SCHEMA:
        if statement.startswith("CREATE VIRTUAL TABLE hits") or "TABLE sources" in statement:
            conn.execute(statement)
    return conn


@pytest.fixture
def conn():
    conn = _table()
    yield conn
    conn.close()


def rows(conn: sqlite3.Connection, *texts: tuple[str, str]) -> None:
    for role, text in texts:
        rowid = conn.execute("INSERT INTO hits (text) VALUES (?)", (text,)).lastrowid
        conn.execute(
            "INSERT INTO sources (rowid, kind, session, role) VALUES (?, 'session', 's', ?)",
            (rowid, role),
        )


GREETED_BY_ASSISTANT = [("assistant", f"Hey Dana! How was day {n}?") for n in range(3)]
GREETED_BY_USER = [("user", f"Thanks, Eli. See you on day {n}.") for n in range(3)]


@pytest.mark.parametrize(
    ("texts", "question", "role"),
    [
        (GREETED_BY_ASSISTANT, "When did Dana bake bread?", "user"),
        (GREETED_BY_USER, "What did Eli suggest for dinner?", "assistant"),
        (GREETED_BY_ASSISTANT + GREETED_BY_USER, "What did Dana tell Eli?", None),  # both
        (GREETED_BY_ASSISTANT + GREETED_BY_USER, "What did Dana bake?", "user"),
        ([("user", f"I met Bob at work on day {n}") for n in range(9)], "Who is Bob?", None),
        (GREETED_BY_ASSISTANT[:2], "When did Dana bake bread?", None),  # too few to tell
        (  # addressed by both roles alike: a third person, not a speaker
            GREETED_BY_ASSISTANT + [("user", f"Hey Dana! day {n}") for n in range(2)],
            "When did Dana bake bread?",
            None,
        ),
        (GREETED_BY_ASSISTANT, "when did dana bake bread?", None),  # not written as a name
        (GREETED_BY_ASSISTANT, "What is new?", None),
        (
            [("assistant", f"Hola Zoë! Día {n}. Thanks, Zoë!") for n in range(3)],
            "Did Zoë go?",
            "user",
        ),
        ([("assistant", f"Hey DANA! day {n}") for n in range(3)], "When did DANA bake?", None),
        ([], "When did Dana bake bread?", None),
    ],
)
def test_the_named_speakers_role(conn, texts, question, role):
    rows(conn, *texts)
    assert addressed.named_role(conn, question) == role


@settings(max_examples=300, deadline=None)
@given(question=st.text(max_size=80))
def test_any_question_gets_a_role_or_none(question):
    conn = _table()
    try:
        rows(conn, ("assistant", f"Hey {question}! {question}"), *GREETED_BY_ASSISTANT)
        for text in (question, question.title(), f"When did {question.title()} go?"):
            assert addressed.named_role(conn, text) in (None, "user", "assistant")
    finally:
        conn.close()


def test_only_the_newest_rows_holding_the_name_are_read(conn, monkeypatch):
    monkeypatch.setattr(addressed, "SAMPLE", 5)
    rows(conn, *GREETED_BY_ASSISTANT)
    assert addressed.named_role(conn, "When did Dana bake?") == "user"
    rows(conn, *[("user", f"Dana and I talked about day {n}") for n in range(5)])
    assert addressed.named_role(conn, "When did Dana bake?") is None


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """The names whose rows addressed.addressing reads, in order."""
    names: list[str] = []
    real = addressed.addressing

    def counted(conn, name):
        names.append(name)
        return real(conn, name)

    monkeypatch.setattr(addressed, "addressing", counted)
    return names


def _role_kept_and_afresh(index: Index, known: addressed.Speakers) -> tuple:
    """named_role of a Dana question, through known and read afresh, in one read transaction."""
    with index.reader() as conn:
        conn.execute("BEGIN")
        try:
            kept = addressed.named_role(conn, "When did Dana bake?", known)
            return kept, addressed.named_role(conn, "When did Dana bake?")
        finally:
            conn.execute("COMMIT")


def test_speakers_reads_a_name_again_once_a_row_holding_it_comes_or_goes(tmp_path, reads):
    home = Home(tmp_path / "h")
    day = [user(f"2026-03-01T10:{n:02d}:00Z", f"I cooked soup on day {n}") for n in range(50)]
    greet = [said(f"2026-03-02T10:0{n}:00Z", f"Hey Dana! How was day {n}?") for n in range(3)]
    append(home, "mm-one", day + day + greet)
    index = Index(home, mode="context")
    index.open()
    known = addressed.Speakers()
    try:
        index.catch_up_all()
        assert _role_kept_and_afresh(index, known) == ("user", "user")
        assert reads == ["Dana", "Dana"]  # kept, and afresh
        # Rows that do not hold the name: what was read of it still holds, and is kept.
        append(home, "mm-one", day[:10])
        index.catch_up_all()
        assert _role_kept_and_afresh(index, known) == ("user", "user")
        assert reads == ["Dana"] * 3
        # One row of over a hundred that addresses Dana from her own side (under a percent
        # more rows): read again at once, as a memoryd just started reads it.
        append(home, "mm-one", [user("2026-03-03T10:00:00Z", "Hey Dana, it is me again")])
        index.catch_up_all()
        assert _role_kept_and_afresh(index, known) == (None, None)  # 3 addresses against 1
        assert reads == ["Dana"] * 5
        # That row forgotten (a deletion): read again, though no row holding the name came.
        with index.reader() as conn:
            (record,) = conn.execute("SELECT max(record) FROM sources").fetchone()
        purge.purge(index, [f"session:mm-one:{record}"])
        assert _role_kept_and_afresh(index, known) == ("user", "user")
        assert reads == ["Dana"] * 7
        known.clear()
        _role_kept_and_afresh(index, known)
        assert reads == ["Dana"] * 9
    finally:
        index.close()


def test_speakers_keeps_nothing_of_a_state_memoryd_did_not_make(tmp_path, reads):
    home = Home(tmp_path / "h")
    append(
        home, "mm-one", [said(f"2026-03-02T10:0{n}:00Z", f"Hey Dana! day {n}") for n in range(3)]
    )
    index = Index(home, mode="context")
    index.open()
    known = addressed.Speakers()
    try:
        index.catch_up_all()
        other = sqlite3.connect(index.path, isolation_level=None)
        other.execute("UPDATE hits SET text = 'Dana went home' WHERE rowid = 3")  # by hand
        other.close()
        for _ in range(2):
            assert _role_kept_and_afresh(index, known) == (None, None)  # 2 addresses left
        assert reads == ["Dana"] * 4
    finally:
        index.close()


@pytest.mark.parametrize(
    ("text", "counted"),
    [
        ("Hey Dana! " + "we talked about the garden. " * 40_000, True),  # at the start
        ("we talked about the garden. " * 40_000 + "See you soon, Dana!", True),  # at the end
        ("we talked about the garden. " * 20_000 + "Hey Dana! " + "more. " * 20_000, False),
    ],
)
def test_of_a_long_row_only_its_two_ends_are_read(conn, text, counted):
    rows(conn, *[("assistant", text)] * 3)
    assert addressed.addressing(conn, "Dana")["assistant"] == (3 if counted else 0)


def test_favour_raises_the_rows_of_the_role_alone():
    where = {
        1: Place("s", 0, False, "user"),
        2: Place("s", 1, False, "assistant"),
        3: Place("s", 2, True, "call"),
        4: Place(None, 0, False, None),
    }
    scores = {1: 0.5, 2: 0.6, 3: 0.4, 4: 0.3, 5: 0.2}
    addressed.favour(scores, where, "user")
    raised = pytest.approx(0.5 * (1 + addressed.FAVOUR))
    assert scores == {1: raised, 2: 0.6, 3: 0.4, 4: 0.3, 5: 0.2}


# Dana (the user) and Eli (the assistant) over three sessions: Eli greets Dana in each, and the
# turn in which Eli talks about Dana's bread holds her name as well as the question's words.
SESSIONS = {
    "mm-one": [
        said("2026-03-01T10:00:00Z", "Hey Dana! How was your weekend?"),
        user("2026-03-01T10:01:00Z", "I baked sourdough bread on Saturday, my first loaf"),
        said("2026-03-01T10:02:00Z", "Dana, bread at home is a big step, I would bake bread too"),
    ],
    "mm-two": [
        said("2026-03-08T10:00:00Z", "Hi Dana! Good to hear from you."),
        user("2026-03-08T10:01:00Z", "The garden is finally green again"),
    ],
    "mm-three": [
        said("2026-03-15T10:00:00Z", "Hello Dana, what is new this week?"),
        user("2026-03-15T10:01:00Z", "Work was busy, nothing else"),
    ],
}


def first_hit(
    tmp_path, mode: str, sessions: dict = SESSIONS, question: str = "When did Dana bake bread?"
) -> tuple[str | None, str]:
    """The role and snippet of the first hit for question, over sessions indexed in mode."""
    home = Home(tmp_path / "h")
    for session, records in sessions.items():
        append(home, session, records)
    index = Index(home, mode=mode)
    index.open()
    try:
        index.catch_up_all()
        assert index.drain_embeddings(120)
        hit = recall_on(index, question, k=5, session="mm-q").hits[0]
    finally:
        index.close()
    return hit.role, hit.snippet


@pytest.mark.parametrize("mode", ["context", "hybrid"])
def test_the_named_speakers_own_turn_comes_first(tmp_path, mode, monkeypatch):
    if mode == "hybrid":
        pytest.importorskip("onnxruntime")
    assert first_hit(tmp_path / "favoured", mode) == (
        "user",
        "I baked sourdough bread on Saturday, my first loaf",
    )
    monkeypatch.setattr(addressed, "FAVOUR", 0.0)  # without it, the greeting's words win
    assert first_hit(tmp_path / "plain", mode)[0] == "assistant"


def test_an_open_index_reads_a_name_once_until_its_file_is_replaced(tmp_path, reads):
    home = Home(tmp_path / "h")
    for session, records in SESSIONS.items():
        append(home, session, records)
    index = Index(home, mode="context")
    index.open()
    try:
        index.catch_up_all()
        for _ in range(3):
            recall_on(index, "When did Dana bake bread?", k=5, session="mm-q")
        assert reads == ["Dana"]
        index.live.reset()  # as when a reindex swaps the file in
        recall_on(index, "When did Dana bake bread?", k=5, session="mm-q")
        assert reads == ["Dana", "Dana"]
    finally:
        index.close()


def test_spec_mode_ranks_as_the_spec_does(tmp_path):
    assert first_hit(tmp_path, "spec")[0] == "assistant"


_SMALL_TALK = (
    ("I had a busy week at work", "That sounds lovely"),
    ("The weather was nice on Sunday", "Tell me more about it"),
    ("I read a new book", "What a nice plan"),
    ("We cooked pasta for dinner", "I hope it went well"),
)


def _support_group(days: int) -> list[dict]:
    """days of small talk in which the assistant greets Caroline twice, then her turn about the
    support group and the assistant's answer, which holds the question's words as well."""
    records = []
    for day in range(days):
        said_by_user, answer = _SMALL_TALK[day % 4]
        at = f"2026-03-01T{10 + day // 30}:{2 * day % 60:02d}"
        greeting = "Hey Caroline! " if day in (5, 20) else ""
        records.append(user(f"{at}:00Z", f"{said_by_user} number {day}"))
        records.append(said(f"{at}:30Z", greeting + answer))
    return [
        *records,
        user("2026-03-02T12:00:00Z", "I went to the support group yesterday"),
        said("2026-03-02T12:01:00Z", "The support group sounds like a good idea"),
    ]


@pytest.mark.parametrize("mode", ["context", "hybrid"])
def test_a_running_index_answers_as_a_restarted_one(tmp_path, mode, monkeypatch):
    """A third address makes Caroline the owner's name: the index that was running when the row
    came answers in the order a restarted one does, however few rows that row added."""
    if mode == "hybrid":
        pytest.importorskip("onnxruntime")
        from memoryd.modes import vectors

        # The exact matrix looks for new vectors once a second: at once here, so that both
        # recalls score the new row's vector.
        monkeypatch.setattr(vectors, "REFRESH_INTERVAL", 0.0)
    home = Home(tmp_path / "h")
    append(home, "mm-one", _support_group(60))
    question = "When did Caroline go to the support group?"
    answers = []
    index = Index(home, mode=mode)
    index.open()
    try:
        index.catch_up_all()
        assert index.drain_embeddings(120)
        recall_on(index, question, k=3, session="mm-q")  # what is read of Caroline is kept
        append(home, "mm-one", [said("2026-03-03T12:05:00Z", "Thanks, Caroline!")])
        index.catch_up_all()
        assert index.drain_embeddings(120)
        answers.append(recall_on(index, question, k=3, session="mm-q").text)
    finally:
        index.close()
    index = Index(home, mode=mode)  # memoryd restarted over the same memory
    index.open()
    try:
        index.catch_up_all()
        assert index.drain_embeddings(120)
        answers.append(recall_on(index, question, k=3, session="mm-q").text)
    finally:
        index.close()
    assert answers[0] == answers[1], answers
    assert "I went to the support group" in answers[0].splitlines()[1]  # the owner's, first
