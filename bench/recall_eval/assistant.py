"""Deterministic, seeded conversations of one user with an assistant (LongMemEval's shape, and
the owner's agent at work): many sessions, the assistant's answers long or short, tool calls
between the turns, and facts told in passing that questions ask about later.

Three shapes:
- `longmem`: SESSIONS_LONG sessions of chat about everyday topics, each a few requests answered
  in several sentences (a few hundred words), a web search now and then;
- `chat`: the same conversations as longmem's with no tool rows at all (LongMemEval's own
  records are the turns alone): what the agent's own calls cost the spec is not in its figures;
- `agent`: SESSIONS_AGENT work sessions of short requests and replies with several tool calls
  each (files read, commands run, searches).
In both, the agent's own tools appear as it would use them: after the user states a fact it may
store it (`memory {...}` with the fact's words) and while helping it may look things up
(`recall {"query": ...}` with a later question's words). Those rows are what the agent did, not
what was said: a question's answer is always the turn that said it.

Kinds (as LongMemEval classifies them): `user` (a fact the user gave in passing), `assistant`
(a fact in the assistant's answer), `preference` (stated in passing, asked for as a request),
`update` (a fact that changed: the later turn is the answer), `when` (something the user did,
asked by its date), `multi` (instances told in three sessions: every one is an answer; "all"
counts the question only when all three are found).
"""

import datetime as dt
import json
import random

from recall_eval import assistant_text as text
from recall_eval.conversations import Conversation, Question, Session

SESSIONS_LONG = 40
SESSIONS_AGENT = 30
# Facts of each kind in one conversation.
PER_KIND = {"user": 8, "assistant": 5, "preference": 5, "update": 4, "when": 4, "multi": 2}
# How often the agent stores a fact the user gave, and recalls a later question's words.
STORE = 0.5
RECALL = 0.5


def _fill(template: str, slots: dict[str, str]) -> str:
    return template.format(**slots)


def _slots(rng: random.Random, fact: dict) -> dict[str, str]:
    return {key: rng.choice(options) for key, options in fact.get("slots", {}).items()}


def _answer(rng: random.Random, shape: str, topic: dict, fact: str | None = None) -> str:
    if shape != "agent":
        lines = rng.sample(topic["lines"], rng.randrange(6, 11))
    else:
        lines = [rng.choice(text.WORK_REPLIES)]
    if fact is not None:
        lines.insert(rng.randrange(len(lines) + 1), fact)
    return " ".join(lines)


class _Writer:
    """Appends the turns of one session, tool calls and their results included."""

    def __init__(self, rng: random.Random, shape: str, session: Session):
        self.rng, self.shape, self.session = rng, shape, session
        self.calls = 0

    def add(self, role: str, words: str) -> int:
        self.session.turns.append((role, words))
        return len(self.session.turns) - 1

    def call(self, name: str, arguments: str) -> None:
        if self.shape == "chat":
            return  # the same conversation, its random draws made, without the tool rows
        self.calls += 1
        self.add("call", f"{name} {arguments}")
        self.add("result", "ok")

    def work_tools(self) -> None:
        count = self.rng.randrange(1, 4) if self.shape == "agent" else int(self.rng.random() < 0.3)
        for _ in range(count):
            if self.shape == "agent":
                name, arguments = self.rng.choice(text.WORK_TOOLS)
                self.call(name, arguments.format(file=self.rng.choice(text.WORK_FILES)))
            else:
                self.call("web_search", json.dumps({"query": self.rng.choice(list(text.TOPICS))}))


def _ask(rng: random.Random, shape: str) -> tuple[str, dict]:
    topic = rng.choice(list(text.TOPICS.values()))
    if shape == "agent":
        return rng.choice(text.WORK_ASKS), topic
    return rng.choice(topic["asks"]), topic


def conversation(seed: int, shape: str = "longmem", prefix: str = "mm") -> Conversation:
    rng = random.Random(seed * 7919 + (2 if shape == "agent" else 1))
    count = SESSIONS_AGENT if shape == "agent" else SESSIONS_LONG
    day = dt.datetime(2024, 1, 8, 9, 0) + dt.timedelta(days=rng.randrange(300))
    sessions = []
    for number in range(count):
        when = day.replace(hour=rng.randrange(7, 22), minute=rng.randrange(60))
        sessions.append(Session(f"{prefix}-{shape[0]}{seed}-{number:02d}", when))
        day += dt.timedelta(days=rng.randrange(2, 9))
    # plans[n]: (kind, index of the question, what the user says, what the assistant says).
    plans: dict[int, list[tuple]] = {n: [] for n in range(count)}
    questions: list[Question] = []
    pending: list[tuple[int, Question]] = []  # (the last session of its evidence, question)

    def plan(kind: str, n: int, user: str, said: str | None, question: Question) -> None:
        plans[n].append((kind, question, user, said))

    for kind, number in PER_KIND.items():
        pool = {
            "user": text.USER_FACTS,
            "assistant": text.ASSISTANT_FACTS,
            "preference": text.PREFERENCES,
            "update": text.UPDATES,
            "when": text.EVENTS,
            "multi": text.MULTI,
        }[kind]
        for fact in rng.sample(pool, number):
            slots = _slots(rng, fact)
            question = Question(kind, _fill(fact["q"], slots), [])
            questions.append(question)
            if kind == "update":
                first = rng.randrange(count - 6)
                later = rng.randrange(first + 4, count)
                plan("old", first, _fill(fact["old"], slots), None, question)
                plan(kind, later, _fill(fact["new"], slots), None, question)
                last = later
            elif kind == "multi":
                chosen = sorted(rng.sample(range(count - 2), 3))
                key = next(iter(slots))
                items = rng.sample(fact["slots"][key], 3)
                for n, item in zip(chosen, items, strict=True):
                    plan(kind, n, _fill(fact["say"], {key: item}), None, question)
                last = chosen[-1]
            elif kind == "assistant":
                last = rng.randrange(count - 2)
                plan(kind, last, _fill(fact["ask"], slots), _fill(fact["say"], slots), question)
            else:
                last = rng.randrange(count - 2)
                plan(kind, last, _fill(fact["say"], slots), None, question)
            pending.append((last, question))
    # The agent's recalls: in a session after the evidence, a lookup with the question's words.
    recalls: dict[int, list[str]] = {n: [] for n in range(count)}
    for last, question in pending:
        if last + 1 < count and rng.random() < RECALL:
            recalls[rng.randrange(last + 1, count)].append(question.text)
    for number, session in enumerate(sessions):
        writer = _Writer(rng, shape, session)
        items = plans[number]
        exchanges = rng.randrange(3, 7) if shape == "agent" else rng.randrange(2, 5)
        slots_at = sorted(rng.sample(range(exchanges + len(items)), len(items)))
        queued = list(items)
        rng.shuffle(queued)
        for step in range(exchanges + len(items)):
            ask, topic = _ask(rng, shape)
            if recalls[number] and rng.random() < 0.5:
                writer.call("recall", json.dumps({"query": recalls[number].pop()}))
            if step not in slots_at:
                writer.add("user", ask)
                writer.work_tools()
                writer.add("assistant", _answer(rng, shape, topic))
                continue
            kind, question, user, said = queued.pop()
            if kind == "assistant":
                writer.add("user", user)
                writer.work_tools()
                at = writer.add("assistant", _answer(rng, shape, topic, said))
            else:
                words = f"{ask} {user}" if rng.random() < 0.5 else f"{user} {ask}"
                at = writer.add("user", words)
                if rng.random() < STORE:
                    writer.call(
                        "memory", json.dumps({"action": "add", "file": "user", "text": user})
                    )
                writer.work_tools()
                writer.add("assistant", _answer(rng, shape, topic))
            if kind != "old":
                question.answers.append((session.name, at))
        for left in recalls[number]:
            writer.call("recall", json.dumps({"query": left}))
    return Conversation(sessions, questions)
