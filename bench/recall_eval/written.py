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

LongMemEval's haystacks also hold chats from ShareGPT and UltraChat: a user asking an assistant
for code, a letter, an explanation or a plan, no life in them, long answers full of everyday
words. `written_filler/` (FILLER: four more writers, 56 sessions, answers of 300 to 550 words)
stands for them: filler=F draws that share of each haystack's other sessions from it, to see
whether a mode holds when most of what it searches is someone else's generic chat.
"""

import json
import random
from pathlib import Path

from recall_eval import public
from recall_eval.conversations import Conversation

FOLDER = Path(__file__).resolve().parent / "written"
HELD_OUT = Path(__file__).resolve().parent / "written_heldout"
# Generic chats with an assistant (coding, writing, explanations, plans) and no person's life in
# them, as ShareGPT and UltraChat give LongMemEval's haystacks: long answers that share everyday
# words with every question. Written after the modes were chosen, by four other writers.
FILLER = Path(__file__).resolve().parent / "written_filler"
# One person's memory per folder, in shapes the sets above lack: technical, Spanish, terse,
# German (written_shapes/README.md). A question's haystack is its whole folder.
SHAPES = Path(__file__).resolve().parent / "written_shapes"
# Sessions in a question's haystack (LongMemEval's small set has about 50).
SIZE = 50


def _sessions(folder: Path) -> dict[str, dict]:
    parts = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]
    return {s["id"]: s for part in parts for s in part["sessions"]}


def items(folder: Path = FOLDER, size: int = SIZE, filler: float = 0.0) -> list[dict]:
    """The questions as LongMemEval's file holds them, each with its haystack; filler: the share
    of the sessions besides the evidence drawn from FILLER rather than the writers' pool."""
    parts = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]
    pool = {s["id"]: s for part in parts for s in part["sessions"]}
    generic = _sessions(FILLER) if filler else {}
    pool.update(generic)
    out = []
    for part in parts:
        for q in part["questions"]:
            evidence = list(q["evidence_sessions"])
            missing = [sid for sid in evidence if sid not in pool]
            if missing:
                raise public.PublicDataError(f"{q['question_id']}: no session {missing[0]}")
            draw = random.Random(q["question_id"])
            wanted = max(0, size - len(evidence))
            from_filler = min(len(generic), round(wanted * filler))
            drawn = draw.sample(sorted(generic), from_filler)
            others = sorted(sid for sid in pool if sid not in evidence and sid not in generic)
            drawn += draw.sample(others, wanted - from_filler)
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
    folder: Path = FOLDER, size: int = SIZE, prefix: str = "wr", filler: float = 0.0
) -> list[Conversation]:
    """One Conversation per question, as public.longmemeval reads LongMemEval's file."""
    out = []
    for n, item in enumerate(items(folder, size, filler)):
        conv = public.longmemeval_item(item, f"{prefix}-{n}")
        if conv is not None:
            out.append(conv)
    return out


def held_out(size: int = SIZE, filler: float = 0.0) -> list[Conversation]:
    """The second set's questions (HELD_OUT), as conversations() gives the first's."""
    return conversations(HELD_OUT, size, "wh", filler)


def shapes() -> dict[str, list[Conversation]]:
    """Each SHAPES folder's questions, each question's haystack every session of its folder."""
    out = {}
    for folder in sorted(p for p in SHAPES.iterdir() if p.is_dir()):
        out[folder.name] = conversations(folder, len(_sessions(folder)), folder.name)
    return out
