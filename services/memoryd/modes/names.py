"""The question as the dense half embeds it: without the names that carry no meaning for it.

Questions name people ("When did Caroline adopt the puppy?"), and a sentence embedding of the
whole question lands on the turns that greet or address that person, not on the one that answers.
A name here is a word that begins with a capital, is not the question's first word, and occurs in
at least NAME_SHARE of the rows (and in MIN_ROWS of them): the participants of a conversation,
whom almost every session names. A rare capitalised word (a city, a product, a pet's name) is the
question's subject and stays. The row counts are the term counts the lexical bound keeps already
(lexbound.py), which count a row of context_hits when the word is in its text or in a
neighbour's: a word said once is counted in about five rows, hence MIN_ROWS. The lexical half
keeps every word: bm25 weighs a common name little by itself.
"""

import re
import sqlite3

from memoryd.modes.lexbound import TermCounts
from memoryd.modes.stopwords import stopwords

NAME_SHARE = 0.05
MIN_ROWS = 20
_WORD = re.compile(r"[^\W\d_][\w]*(?:['’]s\b)?")


def _stem(word: str) -> str:
    return re.sub(r"['’]s$", "", word)


def dense_text(conn: sqlite3.Connection, counts: TermCounts, text: str) -> str:
    """text less its common names (the module docstring); text itself when nothing is removed."""
    words = list(_WORD.finditer(text))
    drop = []
    for position, match in enumerate(words):
        word = _stem(match.group())
        if position == 0 or not word[0].isupper() or word.lower() in stopwords():
            continue  # "I" is everywhere too, but it is the question's subject, not a name
        docs, rows = counts.share(conn, word.lower())
        if docs >= MIN_ROWS and docs >= NAME_SHARE * rows:
            drop.append(match.span())
    if not drop:
        return text
    kept, last = [], 0
    for start, end in drop:
        kept.append(text[last:start])
        last = end
    kept.append(text[last:])
    joined = re.sub(r"\s+", " ", "".join(kept)).strip()
    return re.sub(r" ([?.!,;:])", r"\1", joined)
