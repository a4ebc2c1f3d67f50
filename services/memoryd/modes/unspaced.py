"""Text in scripts written without spaces between words, as context's table indexes it: each run
of such characters written out as its overlapping pairs of characters (bigrams).

unicode61 splits text on what is not a letter or digit, so a Japanese or Chinese sentence
("会議は木曜日に移動しました") is one token, and a word said inside it ("木曜日") is found by no
query but the whole sentence. Thai, Lao, Khmer and Myanmar are split instead at every combining
vowel or tone mark, into fragments that are no words either. Korean is spaced, but its particles
are written onto the word ("회의는"), so its words are never tokens alone. So context's table
holds each run of those scripts as its bigrams, each a token of its own, and the question's runs
are split the same way (query_text): a word of two characters or more is found in any sentence
holding it, and a row holding more of the question's bigrams ranks higher by bm25, as a row
holding more of its words does. Bigrams rather than an FTS5 trigram table: two-character words
(会議, 東京, 회의) are the commonest in these scripts, and a trigram index cannot find them (on
bench/tokens_scripts.py's Japanese, Chinese, Korean and Thai entries, 16,800 rows, it found none
of 7 two-character words, where the bigrams found every row holding each, the best ten rows all
holding it), nor is it smaller (2.9 bytes a character against 2.7); and the bigrams live in
context's own table, under its own ranking, with nothing beside it to fuse.

A Han or Hangul character is often a word by itself (猫, 집), so in a record's own text each of
those is also written once alone after its run's bigrams, and a one-character question finds the
record that says it. Not in the neighbour column: there they would double the length bm25 weighs
every row by, for a word said beside it. A run of one character of any of these scripts is
written as itself. Combining marks are dropped from the runs (unicode61 would split a bigram at
them), as unicode61 drops Latin diacritics: a Thai word is matched without its tone marks. Text
holding none of these scripts is written exactly as it is, so context's table, and its ranking,
are unchanged for it.

The spec's own table and query are not touched: the spec fixes its tokenizer.
"""

import re
import unicodedata
from collections.abc import Iterator

# Scripts written without spaces between words (and Hangul, whose particles are written onto
# the word): their letters make the runs written as bigrams.
_HAN = (
    "\u3005-\u3007\u3021-\u3029\u3038-\u303b\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\U00020000-\U0002fa1f\U00030000-\U000323af"
)
_HANGUL = "\u1100-\u11ff\u3131-\u318e\ua960-\ua97f\uac00-\ud7a3\ud7b0-\ud7ff\uffa0-\uffdc"
_OTHERS = (
    "\u3041-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f\U0001b000-\U0001b16f"  # kana
    "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u1780-\u17ff\u19e0-\u19ff"  # Khmer
    "\u1000-\u109f\ua9e0-\ua9ff\uaa60-\uaa7f"  # Myanmar
)
_RUN = re.compile(f"[{_HAN}{_HANGUL}{_OTHERS}]+")
# Characters that are also written alone (a word by themselves, often).
_ALONE = re.compile(f"[{_HAN}{_HANGUL}]")
# The most pieces a question is searched for: each is a term of context's exact ranking, and the
# 285 of a 500-character Japanese and Chinese question took 0.6 to 1.1 s at 10,000 rows, against
# 0.07 s for 500 characters of English (about 50 terms); the first 48 (a sentence of about 50
# characters) took 0.05 s.
QUERY_PIECES = 48


def _letters(run: str, start: int) -> list[tuple[str, int]]:
    """The run's letters and digits with where each is in the text (marks dropped); an empty
    letter where something else (a sign, a punctuation mark of the script) breaks the run."""
    kept: list[tuple[str, int]] = []
    for offset, char in enumerate(run):
        kind = unicodedata.category(char)[0]
        if kind in "LN":
            kept.append((char, start + offset))
        elif kind != "M":
            kept.append(("", start + offset))
    return kept


def _parts(letters: list[tuple[str, int]]) -> Iterator[list[tuple[str, int]]]:
    """The letters split where a sign broke them."""
    part: list[tuple[str, int]] = []
    for char, at in letters:
        if char:
            part.append((char, at))
        elif part:
            yield part
            part = []
    if part:
        yield part


def _pieces(part: list[tuple[str, int]], alone: bool) -> Iterator[tuple[str, int]]:
    """(piece, where it starts in the text): the part's bigrams, then (alone) its Han and Hangul
    characters one by one; a part of one character is itself."""
    if len(part) == 1:
        yield part[0]
        return
    for (first, at), (second, _) in zip(part, part[1:], strict=False):
        yield first + second, at
    if alone:
        yield from ((char, at) for char, at in part if _ALONE.match(char))


def spaced(text: str, alone: bool = True) -> tuple[str, list[int] | None]:
    """text as context's table holds it: each run of these scripts as its pieces, separated by
    spaces (bigrams, then, with alone, its Han and Hangul characters one by one), the rest as it
    is; and for each character of that, where in text it comes from (None when text is returned
    unchanged)."""
    if _RUN.search(text) is None:
        return text, None
    out: list[str] = []
    where: list[int] = []
    last = 0
    for found in _RUN.finditer(text):
        start = found.start()
        out.append(text[last:start])
        where.extend(range(last, start))
        for part in _parts(_letters(found.group(), start)):
            for piece, at in _pieces(part, alone):
                out.append(f" {piece}")
                where.extend([at] * (len(piece) + 1))
        out.append(" ")
        where.append(found.end())
        last = found.end()
    out.append(text[last:])
    where.extend(range(last, len(text)))
    return "".join(out), where


def stored(text: str, alone: bool = True) -> str:
    """text as context's table holds it (spaced, without the map)."""
    return spaced(text, alone)[0]


def query_text(text: str) -> str:
    """A question as context's table is searched for it: each run of these scripts as its
    bigrams separated by spaces (a run of one character as itself), the first QUERY_PIECES
    different ones, the rest as it is; the spec's splitter then makes its terms. Marks are
    dropped within a run here too, so a Thai word the spec's splitter would cut at its tone marks
    gives the bigrams its text was indexed with."""
    if _RUN.search(text) is None:
        return text
    out: list[str] = []
    seen: set[str] = set()
    last = 0
    for found in _RUN.finditer(text):
        out.append(text[last : found.start()])
        for part in _parts(_letters(found.group(), found.start())):
            for piece, _ in _pieces(part, alone=False):
                if piece not in seen and len(seen) < QUERY_PIECES:
                    seen.add(piece)
                    out.append(f" {piece}")
        out.append(" ")
        last = found.end()
    out.append(text[last:])
    return "".join(out)
