"""A held-out evaluation in LongMemEval's shape, written rather than generated (`written/`).

The generator's conversations are built from templates the modes were tuned on, and a mode
tuned on them did not carry over to the public user-and-assistant benchmark (it fell below the
spec there). So eleven writers (helper agents, as LongMemEval's own sessions were written by a
language model), each given LongMemEval's published description and nothing of this project (no
code, no figures), wrote one person's chats with an assistant in one domain of
life (health, work, home, travel, food, money, hobbies, family, technology, learning, the
outdoors): about 20 dated sessions each of 4 to 6 turns, the assistant's answers 120 to 250
words, facts told in passing in sessions about something else, sessions on the same topics that
hold no answer, and 8 questions of LongMemEval's six types with the turns that answer them
marked has_answer. The files are this project's, under its licence.

As LongMemEval builds a question's haystack from a pool of sessions, each question here gets its
evidence sessions and others drawn from every writer's pool (seeded by the question's id) up to
SIZE sessions, in date order; then public.py reads it as it reads LongMemEval's own file.

A second set (`written_heldout/`, HELD_OUT) was written the same way by eight other writers in
eight other domains after the modes were chosen, and nothing was chosen on it: it says whether
what was chosen on the first set carries over. Its haystacks are drawn from its own pool.
"""

import json
import random
from pathlib import Path

from recall_eval import public
from recall_eval.conversations import Conversation

FOLDER = Path(__file__).resolve().parent / "written"
HELD_OUT = Path(__file__).resolve().parent / "written_heldout"
# Sessions in a question's haystack (LongMemEval's small set has about 50).
SIZE = 50


def items(folder: Path = FOLDER, size: int = SIZE) -> list[dict]:
    """The questions as LongMemEval's file holds them, each with its haystack."""
    parts = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]
    pool = {s["id"]: s for part in parts for s in part["sessions"]}
    out = []
    for part in parts:
        for q in part["questions"]:
            evidence = list(q["evidence_sessions"])
            missing = [sid for sid in evidence if sid not in pool]
            if missing:
                raise public.PublicDataError(f"{q['question_id']}: no session {missing[0]}")
            others = sorted(sid for sid in pool if sid not in evidence)
            drawn = random.Random(q["question_id"]).sample(others, max(0, size - len(evidence)))
            chosen = sorted(evidence + drawn, key=lambda sid: (pool[sid]["date"], sid))
            out.append(
                {
                    "question_id": q["question_id"],
                    "question_type": q["question_type"],
                    "question": q["question"],
                    "answer": q["answer"],
                    "question_date": q["question_date"],
                    "haystack_session_ids": chosen,
                    "haystack_dates": [pool[sid]["date"] for sid in chosen],
                    "haystack_sessions": [
                        [
                            {**turn, "has_answer": bool(turn.get("has_answer")) and sid in evidence}
                            for turn in pool[sid]["turns"]
                        ]
                        for sid in chosen
                    ],
                    "answer_session_ids": evidence,
                }
            )
    return out


def conversations(
    folder: Path = FOLDER, size: int = SIZE, prefix: str = "wr"
) -> list[Conversation]:
    """One Conversation per question, as public.longmemeval reads LongMemEval's file."""
    out = []
    for n, item in enumerate(items(folder, size)):
        conv = public.longmemeval_item(item, f"{prefix}-{n}")
        if conv is not None:
            out.append(conv)
    return out


def held_out(size: int = SIZE) -> list[Conversation]:
    """The second set's questions (HELD_OUT), as conversations() gives the first's."""
    return conversations(HELD_OUT, size, "wh")
