"""Conversations read from the files of two public long-term-memory benchmarks, for an evaluation
on real conversations beside the generated ones. The files are not in the repository (their
licences are not ours to carry); pass their paths to bench_recall_modes.py quality.

- LoCoMo (`locomo10.json`: a list of samples, each a conversation between two people in numbered
  sessions with a date each, and questions whose evidence names turns as "D<session>:<turn>"):
  one Conversation per sample. The first speaker's turns are recorded as the user's, the
  second's as the assistant's; a turn that shares a photo carries its caption after the text, as
  an agent that saw the photo would have recorded it. Questions of category 5 (adversarial: no
  answer in the conversation) and questions without evidence are left out. Kinds by category:
  1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop.
- LongMemEval (`longmemeval_s.json` and its kin: a list of questions, each with its own
  haystack of dated sessions of user and assistant turns, the turns that hold the answer marked
  has_answer): one Conversation per question. Abstention questions (ids ending in `_abs`) and
  questions with no marked turn are left out. Kinds are the question types.

Evidence is turn-level: a question is found at k when one of its evidence turns is in the top k.
"""

import datetime as dt
import json
import re
from pathlib import Path

from recall_eval.conversations import Conversation, Question, Session

LOCOMO_KINDS = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
LONGMEM_KINDS = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)
_EVIDENCE = re.compile(r"D(\d+):(\d+)")
_SESSION_KEY = re.compile(r"session_(\d+)")


class PublicDataError(ValueError):
    """The file is not in the benchmark's format."""


def _locomo_time(text: str) -> dt.datetime:
    """'1:56 pm on 8 May, 2023' (LoCoMo's session dates)."""
    try:
        return dt.datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return dt.datetime.strptime(text.strip(), "%I:%M %p on %d %b, %Y")


def locomo(path: Path, prefix: str = "lc") -> list[Conversation]:
    samples = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(samples, list):
        raise PublicDataError(f"{path}: not a list of LoCoMo samples")
    return [_locomo_sample(sample, f"{prefix}-{n}") for n, sample in enumerate(samples)]


def _locomo_sample(sample: dict, name: str) -> Conversation:
    talk = sample["conversation"]
    first = talk.get("speaker_a")
    numbers = sorted(
        int(m.group(1)) for key in talk if (m := _SESSION_KEY.fullmatch(key)) and talk[key]
    )
    sessions, where = [], {}
    for number in numbers:
        session = Session(f"{name}-{number:02d}", _locomo_time(talk[f"session_{number}_date_time"]))
        for record, turn in enumerate(talk[f"session_{number}"]):
            text = turn.get("text", "")
            if turn.get("blip_caption"):
                text = f"{text} [shares a photo: {turn['blip_caption']}]"
            role = "user" if turn.get("speaker") == first else "assistant"
            session.turns.append((role, text))
            where[turn["dia_id"]] = (session.name, record)
        sessions.append(session)
    questions = []
    for qa in sample.get("qa", []):
        kind = LOCOMO_KINDS.get(qa.get("category"))
        answers = [where[e] for e in _evidence_ids(qa.get("evidence", [])) if e in where]
        if kind and answers:
            questions.append(Question(kind, qa["question"], answers))
    return Conversation(sessions, questions)


def _evidence_ids(evidence: list[str]) -> list[str]:
    """The "D<session>:<turn>" ids in an evidence list (a few entries of the public file hold
    two ids in one string, or a stray space)."""
    return [f"D{s}:{t}" for item in evidence for s, t in _EVIDENCE.findall(str(item))]


_LONGMEM_DATE = re.compile(r"(\d{4})[/-](\d{1,2})[/-](\d{1,2})(?:\D+?(\d{1,2}):(\d{2}))?")


def _longmem_time(text: str) -> dt.datetime:
    """'2023/05/20 (Sat) 02:21' (LongMemEval's haystack dates; a date alone, or with dashes,
    as copies of the file sometimes have it)."""
    found = _LONGMEM_DATE.search(text)
    if found is None:
        raise PublicDataError(f"a haystack date that is not a date: {text!r}")
    year, month, day, hour, minute = (int(g) if g else 0 for g in found.groups())
    return dt.datetime(year, month, day, hour, minute)


def longmemeval(path: Path, prefix: str = "lm", limit: int | None = None) -> list[Conversation]:
    items = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(items, list):
        raise PublicDataError(f"{path}: not a list of LongMemEval questions")
    out = []
    for n, item in enumerate(items):
        if limit is not None and len(out) >= limit:
            break
        conv = longmemeval_item(item, f"{prefix}-{n}")
        if conv is not None:
            out.append(conv)
    return out


def longmemeval_item(item: dict, name: str) -> Conversation | None:
    if str(item.get("question_id", "")).endswith("_abs"):
        return None
    sessions, answers = [], []
    for number, (date, turns) in enumerate(
        zip(item["haystack_dates"], item["haystack_sessions"], strict=True)
    ):
        session = Session(f"{name}-{number:03d}", _longmem_time(date))
        for record, turn in enumerate(turns):
            role = "user" if turn.get("role") == "user" else "assistant"
            session.turns.append((role, turn.get("content", "")))
            if turn.get("has_answer"):
                answers.append((session.name, record))
        sessions.append(session)
    if not answers:
        return None
    kind = str(item.get("question_type", "unknown"))
    return Conversation(sessions, [Question(kind, item["question"], answers)])
