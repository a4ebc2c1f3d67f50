"""The evaluation's readers of the public benchmarks' files (bench/recall_eval/public.py), on small
files written here in the benchmarks' formats: what becomes a session, a turn's role and text, and
which turns a question's evidence names."""

import collections
import datetime as dt
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from recall_eval import public, written  # noqa: E402

LOCOMO = [
    {
        "qa": [
            {"question": "When did Ann adopt a cat?", "evidence": ["D2:2"], "category": 2},
            {"question": "What does Ann paint?", "evidence": ["D1:1", "D2:1"], "category": 1},
            {"question": "What is Bo's dog called?", "evidence": [], "category": 5},
            {"question": "Unanswerable?", "evidence": ["D1:2"], "category": 5},
            {"question": "Where did Bo go?", "evidence": ["D1:2; D2:1"], "category": 4},
            {"question": "No such turn?", "evidence": ["D9:9"], "category": 4},
        ],
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I paint lakes."},
                {
                    "speaker": "Bo",
                    "dia_id": "D1:2",
                    "text": "I went to Oslo.",
                    "blip_caption": "a fjord",
                },
            ],
            "session_2_date_time": "10:04 am on 12 June, 2023",
            "session_2": [
                {"speaker": "Bo", "dia_id": "D2:1", "text": "Back home."},
                {"speaker": "Ann", "dia_id": "D2:2", "text": "We adopted a cat!"},
            ],
        },
    }
]


def _longmem(qid: str, marked: bool) -> dict:
    return {
        "question_id": qid,
        "question_type": "single-session-user",
        "question": "Where did I park?",
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/22 (Mon) 18:40"],
        "haystack_session_ids": ["s1", "s2"],
        "haystack_sessions": [
            [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}],
            [{"role": "user", "content": "I parked on level 3.", "has_answer": marked}],
        ],
    }


def test_locomo_sessions_roles_and_evidence(tmp_path):
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(LOCOMO))
    (conv,) = public.locomo(path, prefix="t")
    assert [s.name for s in conv.sessions] == ["t-0-01", "t-0-02"]
    assert conv.sessions[1].start == dt.datetime(2023, 6, 12, 10, 4)
    assert conv.sessions[0].turns == [
        ("user", "I paint lakes."),
        ("assistant", "I went to Oslo. [shares a photo: a fjord]"),
    ]
    assert conv.sessions[1].turns[0] == ("assistant", "Back home.")
    found = [(q.kind, q.text, q.answers) for q in conv.questions]
    assert found == [
        ("temporal", "When did Ann adopt a cat?", [("t-0-02", 1)]),
        ("multi-hop", "What does Ann paint?", [("t-0-01", 0), ("t-0-02", 0)]),
        ("single-hop", "Where did Bo go?", [("t-0-01", 1), ("t-0-02", 0)]),
    ]


def test_longmemeval_marked_turns_and_abstentions(tmp_path):
    path = tmp_path / "longmemeval_s.json"
    items = [_longmem("q1", True), _longmem("q2_abs", True), _longmem("q3", False)]
    path.write_text(json.dumps(items))
    convs = public.longmemeval(path, prefix="t")
    assert len(convs) == 1
    (conv,) = convs
    assert [s.name for s in conv.sessions] == ["t-0-000", "t-0-001"]
    assert conv.sessions[1].start == dt.datetime(2023, 5, 22, 18, 40)
    (question,) = conv.questions
    assert (question.kind, question.answers) == ("single-session-user", [("t-0-001", 0)])
    assert public.longmemeval(path, limit=0) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2023/05/20 (Sat) 02:21", dt.datetime(2023, 5, 20, 2, 21)),
        ("2024-01-02", dt.datetime(2024, 1, 2)),
        ("2026/01/03 12:00", dt.datetime(2026, 1, 3, 12, 0)),
    ],
)
def test_longmemeval_dates(text, expected):
    assert public._longmem_time(text) == expected


def test_a_date_that_is_not_one_is_named():
    with pytest.raises(public.PublicDataError, match="not a date: 'soon'"):
        public._longmem_time("soon")


@pytest.mark.parametrize("reader", [public.locomo, public.longmemeval])
def test_a_file_of_another_shape_is_refused(tmp_path, reader):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"not": "a list"}))
    with pytest.raises(public.PublicDataError, match="not a list"):
        reader(path)


@pytest.mark.parametrize(
    ("read", "writers", "prefix"),
    [(written.conversations, 11, "wr"), (written.held_out, 8, "wh")],
    ids=["first", "held-out"],
)
def test_the_written_evaluation_reads_as_longmemeval_does(read, writers, prefix):
    convs = read()
    assert len(convs) == 8 * writers
    kinds = collections.Counter(c.questions[0].kind for c in convs)
    # Each writer asked one question of each single-session kind and of knowledge-update, and two
    # of multi-session and of temporal-reasoning.
    assert kinds == {
        "single-session-user": writers,
        "single-session-assistant": writers,
        "single-session-preference": writers,
        "multi-session": 2 * writers,
        "knowledge-update": writers,
        "temporal-reasoning": 2 * writers,
    }
    # The two sets' sessions never share a name, so their homes can be compared side by side.
    assert {s.name.split("-")[0] for c in convs for s in c.sessions} == {prefix}
    for conv in convs:
        assert len(conv.sessions) == written.SIZE
        starts = [s.start for s in conv.sessions]
        assert starts == sorted(starts)
        turns = {s.name: s.turns for s in conv.sessions}
        (question,) = conv.questions
        for session, record in question.answers:
            assert turns[session][record][1].strip()
        # What the assistant said is in its own turns.
        roles = {turns[s][r][0] for s, r in question.answers}
        assert question.kind != "single-session-assistant" or "assistant" in roles


def test_a_written_question_whose_evidence_is_missing_is_named(tmp_path):
    part = {
        "sessions": [{"id": "x-s01", "date": "2023/01/02 (Mon) 10:00", "turns": []}],
        "questions": [
            {
                "question_id": "x-q1",
                "question_type": "single-session-user",
                "question": "What?",
                "answer": "That.",
                "question_date": "2023/07/01 (Sat) 10:00",
                "evidence_sessions": ["x-s02"],
            }
        ],
    }
    (tmp_path / "x.json").write_text(json.dumps(part))
    with pytest.raises(public.PublicDataError, match="x-q1: no session x-s02"):
        written.items(tmp_path)


@pytest.mark.parametrize("share", [0.0, 0.5, 1.0])
def test_generic_filler_takes_its_share_of_a_haystack_and_never_holds_an_answer(share):
    """The written questions with generic assistant chats (written_filler/) mixed into their
    haystacks: the evidence stays, the filler takes its share of the other sessions, and no
    filler turn is marked as an answer."""
    plain = {item["question_id"]: item for item in written.items()}
    pool = len(list(written.FILLER.glob("*.json"))) * 14  # each writer wrote 14 sessions
    for item in written.items(filler=share):
        ids = item["haystack_session_ids"]
        assert len(ids) == written.SIZE and len(set(ids)) == written.SIZE
        assert set(plain[item["question_id"]]["answer_session_ids"]) <= set(ids)
        generic = [sid for sid in ids if sid.startswith("f")]
        others = written.SIZE - len(item["answer_session_ids"])
        assert len(generic) == min(round(others * share), pool), item["question_id"]
        for sid, turns in zip(ids, item["haystack_sessions"], strict=True):
            assert not (sid in generic and any(t["has_answer"] for t in turns))
