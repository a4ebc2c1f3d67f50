"""Whose turns a question is about when it names no speaker: its grammatical person.

An owner asking "What degree did I graduate with?" asks about what they said themselves, and
the answer is one of their own turns ("by the way, I graduated in Business Administration"),
told in passing in a session about something else. By words alone the agent's long answers
outrank it: they hold more of the question's words, and in context mode their neighbours' too.
The spec, which keeps every word, leans the other way without saying so: "I" and "my" match the
owner's turns, not the agent's, which say "you". context and hybrid drop those words as
stopwords, so they read the person here instead and raise that role's rows by
addressed.FAVOUR, as for a named speaker (which wins when a question has both).

- A question that speaks of what the agent said ("what did you suggest", "your advice") is
  about the assistant's turns. A "you" after a request word ("can you suggest", "would you
  recommend") asks the agent to do something now and says nothing of whose turn answers; one
  after what the user did to it ("the book I told you about") is the user's turn.
- Otherwise a question in the first person (I, me, my, we, our) is about the user's turns.
- A question about "our conversation" or what "we talked" about may mean either side: no role.
- Any other question (third person, another language) favours no one. Only an English
  question is read at all (language.py's guess, English in doubt): Spanish "¿Cuánto me
  dijiste…?" asks what the agent said, and its "me" is not the English first person.
"""

import re

from memoryd.modes import language

USER, ASSISTANT = "user", "assistant"
FIRST = frozenset({"i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "ourselves"})
SECOND = frozenset({"you", "your", "yours", "yourself"})
# Before "you", these make a request of the agent rather than speak of what it said.
REQUEST = frozenset(
    {"can", "could", "would", "will", "do", "please", "if", "should"}
    | {"can't", "couldn't", "won't", "wouldn't", "don't"}
)
# After these, "you" is the object of what the user did ("I told you", "I sent to you"): the
# user's turn, not the agent's.
OBJECT = frozenset(
    "told tell asked ask showed show gave give sent send to with for thank thanks let".split()
)
# Contractions that are themselves a request ("any ideas you'd recommend?").
REQUESTING = frozenset({"you'd", "you'll"})
# Words that make "we" or "our" mean both sides of the conversation.
TALK = frozenset(
    "conversation conversations chat chats chatted discussion discussed talk talked".split()
)

_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


def role(question: str) -> str | None:
    """The role whose turns the question asks about, by its grammatical person, or None."""
    typed = _WORD.findall(question.replace("\u2019", "'"))
    if language.guess(typed) != language.ENGLISH:  # read as typed: its capitals name names
        return None
    words = [word.lower() for word in typed]
    heads = [word.split("'", 1)[0] for word in words]
    for i, head in enumerate(heads):
        if head in SECOND and words[i] not in REQUESTING:
            if i == 0 or (words[i - 1] not in REQUEST and words[i - 1] not in OBJECT):
                return ASSISTANT
    found = set(heads)
    if found & TALK:
        return None
    return USER if found & FIRST else None
