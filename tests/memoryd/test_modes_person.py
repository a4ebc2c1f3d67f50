"""A question that names no speaker favours the role its grammatical person asks about: the
owner's own turns for "I" and "my", the agent's for what "you" said; a request made of the agent
("can you suggest") favours no one by its "you"; the spec mode is left as it is."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.modes import addressed, person
from tests.memoryd import test_modes_addressed as addressed_tests
from tests.memoryd.test_modes_context import said, user


@pytest.mark.parametrize(
    ("question", "role"),
    [
        ("What degree did I graduate with?", "user"),
        ("How many chickens do we have at this point?", "user"),
        ("Where did my daughter start school?", "user"),
        ("What's my 5K PR right now?", "user"),
        ("What\u2019s my salary now?", "user"),
        ("Which hotel did you suggest for my weekend in Porto?", "assistant"),
        ("You told me about a breathing technique. What was it?", "assistant"),
        ("What was your advice on pruning roses?", "assistant"),
        ("Can you remind me what you recommended for my back?", "assistant"),
        ("When I asked you for a sweater pattern, which one did you pick?", "assistant"),
        # A request of the agent: its "you" says nothing of whose turn answers.
        ("Can you suggest a few dinners I could cook this week?", "user"),
        ("What software would you recommend for editing my videos?", "user"),
        ("Any resources you'd recommend for my Italian?", "user"),
        ("Could you suggest a board game?", None),
        # What the user did to the agent is the user's turn.
        ("What was the restaurant I told you about?", "user"),
        ("Which photos did I send to you last week?", "user"),
        # Either side's words: the conversation itself.
        ("In our chat about tomatoes, which variety was earliest?", None),
        ("When we talked about the trip, which bus was it?", None),
        # Nobody's person.
        ("When did Caroline go to the support group?", None),
        ("How many days passed between the two parties?", None),
        ("Wann habe ich Brot gebacken?", None),
        ("", None),
    ],
)
def test_the_role_of_a_questions_person(question, role):
    assert person.role(question) == role


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_question_gets_a_role_or_none(question):
    assert person.role(question) in (None, "user", "assistant")


# The owner tells in passing what they baked; the agent's long answer in the next session holds
# more of the question's words, so by words alone it comes first.
SESSIONS = {
    "mm-one": [
        user(
            "2026-03-01T10:00:00Z",
            "Could you plan my week? By the way, I baked a rye loaf on Saturday.",
        ),
        said("2026-03-01T10:01:00Z", "Here is a plan: Monday rest, Tuesday a long walk."),
    ],
    "mm-two": [
        user("2026-03-08T10:00:00Z", "What is a good weekend hobby?"),
        said(
            "2026-03-08T10:01:00Z",
            "Many people bake on Saturday: a loaf baked on Saturday, rye or wheat, keeps for"
            " days, and people who bake a loaf each Saturday say it calms them.",
        ),
    ],
}


def first_hit(tmp_path, mode: str, question: str) -> tuple[str | None, str]:
    return addressed_tests.first_hit(tmp_path, mode, SESSIONS, question)


@pytest.mark.parametrize("mode", ["context", "hybrid"])
def test_the_owners_own_turn_comes_first_for_a_question_in_the_first_person(
    tmp_path, mode, monkeypatch
):
    if mode == "hybrid":
        pytest.importorskip("onnxruntime")
    question = "What loaf did I bake on Saturday?"
    role, snippet = first_hit(tmp_path / "favoured", mode, question)
    assert role == "user" and "rye loaf" in snippet
    monkeypatch.setattr(addressed, "FAVOUR", 0.0)  # without it, the agent's words win
    assert first_hit(tmp_path / "plain", mode, question)[0] == "assistant"


def test_spec_mode_ranks_as_the_spec_does(tmp_path, monkeypatch):
    # The spec keeps "I" and "did", which its owner's turn holds: it finds that turn by itself.
    question = "What loaf did I bake on Saturday?"
    assert first_hit(tmp_path / "favoured", "spec", question)[0] == "user"
    monkeypatch.setattr(person, "role", lambda _question: "assistant")
    assert first_hit(tmp_path / "other", "spec", question)[0] == "user"
