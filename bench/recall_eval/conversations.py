"""Deterministic, seeded multi-session conversations between two people, with questions and the
turns that answer them (LoCoMo's shape: records are turns, a session has a date).

Each conversation: two people (the first speaks as "user", the second as "assistant" records),
SESSIONS sessions a week or two apart, each a greeting, chit-chat from FILLER and the events and
recurring-topic updates that fall in it. Questions come from templates.py; a paraphrase question
that shares a word (after crude stemming, stopwords aside) with its answer is dropped, so that kind
really has no word in common with the answer. `multi` asks about a recurring topic as a whole: its
three updates, in three sessions, are all answers.
"""

import datetime as dt
import random
import re
from dataclasses import dataclass, field

from memoryd.modes.dates import MONTHS
from memoryd.modes.stopwords import stopwords
from recall_eval.templates import EVENTS, FILLER, OPENERS, PEOPLE, RECURRING

SESSIONS = 24
# The question about a recurring topic as a whole (LoCoMo's multi-hop: evidence in several
# sessions).
MULTI_Q = "What did {who} say about the {topic} over the months?"
EVENTS_PER_PERSON = 6


@dataclass
class Session:
    name: str
    start: dt.datetime
    turns: list[tuple[str, str]] = field(default_factory=list)  # (role, text)

    def time(self, record: int) -> str:
        return (self.start + dt.timedelta(minutes=record)).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Question:
    kind: str  # third, paraphrase, detail, when, date, multi (and assistant.py's kinds)
    text: str
    answers: list[tuple[str, int]]  # (session, record)


@dataclass
class Conversation:
    sessions: list[Session]
    questions: list[Question]


def _stem(word: str) -> str:
    word = word.lower().removesuffix("'s")
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _content(text: str, names: set[str]) -> set[str]:
    words = re.findall(r"[^\W_]+", text)
    return {_stem(w) for w in words if w.lower() not in stopwords() and w not in names}


def _fill(template: str, slots: dict[str, str]) -> str:
    text = template.format(**slots)
    return text[0].upper() + text[1:]


def conversation(seed: int, prefix: str = "mm") -> Conversation:
    rng = random.Random(seed)
    (a, a_pro), (b, b_pro) = rng.sample(PEOPLE, 2)
    people = {"user": (a, a_pro), "assistant": (b, b_pro)}
    names = {a, b}
    day = dt.datetime(2023, 1, 2, 9, 0) + dt.timedelta(days=rng.randrange(365))
    sessions: list[Session] = []
    for number in range(SESSIONS):
        when = day.replace(hour=rng.randrange(8, 21), minute=rng.randrange(60))
        sessions.append(Session(f"{prefix}-{seed}-{number:02d}", when))
        day += dt.timedelta(days=rng.randrange(7, 16))
    # What happens in which session: events, then recurring updates in three different months.
    plans: dict[int, list[tuple]] = {n: [] for n in range(SESSIONS)}
    for role in ("user", "assistant"):
        for event in rng.sample(EVENTS, EVENTS_PER_PERSON):
            slots = {key: rng.choice(options) for key, options in event["slots"].items()}
            plans[rng.randrange(SESSIONS)].append(("event", role, event, slots))
        topic = rng.choice(RECURRING)
        months: dict[str, int] = {}
        for n in rng.sample(range(SESSIONS), SESSIONS):
            months.setdefault(f"{sessions[n].start:%Y-%m}", n)
        chosen = sorted(rng.sample(sorted(months.values()), 3))
        for update, n in zip(topic["updates"], chosen, strict=True):
            plans[n].append(("update", role, topic, update))
    questions: list[Question] = []
    told: dict[tuple[str, str], list[tuple[str, int]]] = {}  # (role, topic): its updates' turns
    for number, session in enumerate(sessions):
        turns = session.turns
        other = {"user": "assistant", "assistant": "user"}
        turns.append(("user", f"Hey {b}! {rng.choice(FILLER[:3])}"))
        turns.append(("assistant", f"Hi {a}! {rng.choice(FILLER[3:10])}"))
        blocks = plans[number]
        rng.shuffle(blocks)
        filler = rng.sample(FILLER, rng.randrange(14, 22))
        cut = sorted(rng.sample(range(len(filler) + 1), len(blocks)))
        pieces = [filler[i:j] for i, j in zip([0, *cut], [*cut, len(filler)], strict=True)]
        for chunk, block in zip(pieces, [*blocks, None], strict=True):
            for text in chunk:
                turns.append((rng.choice(["user", "assistant"]), text))
            if block is None:
                continue
            kind, role, item, extra = block
            who, pro = people[role]
            if kind == "event":
                slots = {**extra, "who": who, "pro": pro}
                turns.append((other[role], rng.choice(OPENERS)))
                say = len(turns)
                turns.append((role, _fill(item["say"], slots)))
                turns.append((other[role], _fill(item["react"], slots)))
                detail = len(turns)
                turns.append((role, _fill(item["detail"], slots)))
                said = turns[say][1]
                for qkind, key, answer in (
                    ("third", "third", say),
                    ("paraphrase", "paraphrase", say),
                    ("detail", "detail_q", detail),
                    ("when", "when", say),
                ):
                    text = _fill(item[key], slots)
                    if qkind == "paraphrase" and _content(text, names) & _content(said, names):
                        continue
                    questions.append(Question(qkind, text, [(session.name, answer)]))
            else:
                answer = len(turns)
                turns.append((role, extra))
                turns.append((other[role], rng.choice(FILLER[-6:])))
                month = f"{MONTHS[session.start.month - 1]} {session.start.year}"
                text = item["date_q"].format(who=who, month=month)
                questions.append(Question("date", text, [(session.name, answer)]))
                told.setdefault((role, item["topic"]), []).append((session.name, answer))
    # A topic told in three sessions, asked about as a whole: every update is an answer.
    for (role, topic), answers in told.items():
        text = MULTI_Q.format(who=people[role][0], topic=topic)
        questions.append(Question("multi", text, answers))
    return Conversation(sessions, questions)
