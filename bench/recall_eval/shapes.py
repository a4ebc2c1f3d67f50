"""The evaluation's shapes by name, their question kinds, and how a ranking is scored.

- `locomo`: two people chatting, short turns, 24 sessions (conversations.py);
- `longmem`: a user and an assistant, long answers, 40 sessions, tool calls now and then;
- `chat`: the same without any tool row (LongMemEval's records);
- `agent`: the owner's agent at work, short replies, several tool calls a request, 30 sessions
  (both assistant.py).
A question is found at k ("any") when one of its answers is among the first k hits, and fully
found ("all") when every one is; a question with one answer counts the same in both.
"""

import collections
from collections.abc import Sequence

from recall_eval import assistant, conversations
from recall_eval.conversations import Conversation, Question

SHAPES = ("locomo", "longmem", "chat", "agent")
KINDS = {
    "locomo": ("third", "paraphrase", "detail", "when", "date", "multi"),
    "longmem": ("user", "assistant", "preference", "update", "when", "multi"),
    "chat": ("user", "assistant", "preference", "update", "when", "multi"),
    "agent": ("user", "assistant", "preference", "update", "when", "multi"),
}


def conversation(shape: str, seed: int) -> Conversation:
    if shape == "locomo":
        return conversations.conversation(seed)
    return assistant.conversation(seed, shape)


class Tally:
    """Per kind (and "all"): any@5, any@10, all@5, all@10, distinct sessions in the top 5, n."""

    def __init__(self) -> None:
        self.counts: dict[str, list[float]] = collections.defaultdict(lambda: [0.0] * 6)

    def add(self, question: Question, ranked: Sequence[tuple[str, int]]) -> None:
        answers = set(question.answers)
        for key in (question.kind, "all"):
            c = self.counts[key]
            for slot, k in ((0, 5), (1, 10)):
                top = set(ranked[:k])
                c[slot] += bool(top & answers)
                c[slot + 2] += answers <= top
            c[4] += len({session for session, _ in ranked[:5]})
            c[5] += 1

    def rate(self, key: str, slot: int) -> float:
        c = self.counts.get(key)
        return c[slot] / c[5] if c and c[5] else float("nan")

    def n(self, key: str) -> int:
        c = self.counts.get(key)
        return int(c[5]) if c else 0
