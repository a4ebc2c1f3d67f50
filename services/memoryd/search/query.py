"""The recall query and its snippets, as pure text functions (spec 5).

The model's query reaches FTS5 only as quoted terms: it is split on anything that is not a letter
or digit, each term is wrapped in double quotes, and the terms are joined with OR. A term holds
only letters and digits, so it can hold no quote, and no FTS5 operator (NEAR, *, ^, column
filters, parentheses, AND/NOT) survives as syntax: inside quotes it is a plain string.

A long text's snippet is a window around where it matches the query as the searched table's
tokenizer matches it (firstmatch.py: FTS5 itself, on an in-memory table; nothing else here reads
SQLite). The window is measured as recall shows it (defuse.shown_width): a character shown as an
escape, "\\u{E0041}", counts as the nine characters the reader gets, so a text of invisible
characters gives a snippet of at most 600 characters too, with its match in it.
"""

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from memoryd.search.defuse import (
    ELLIPSIS,
    defuse,  # noqa: F401  (the defusing of snippets lives in defuse.py)
    shown_width,
)
from memoryd.search.firstmatch import first_match
from memoryd.search.tokencount import SPEC, Table
from proto.trim import trim

SNIPPET_LIMIT = 600
# Letters and digits: \w without the underscore.
_TERM = re.compile(r"[^\W_]+")
# Characters shown before the first matching term when a text is cut.
_LEAD = 120


def query_terms(query: str) -> list[str]:
    """The terms of a query: its runs of letters and digits, in order, without repeats. The query
    is read in its composed form (NFC) first: a word typed decomposed ("Bru" and a combining
    diaeresis, as macOS and some input methods send it) is the same word to its reader, and a
    combining mark is no letter, so the split would cut it in two where the composed letter
    holds it whole, and its halves would match nothing."""
    return list(dict.fromkeys(_TERM.findall(unicodedata.normalize("NFC", query))))


def terms_expression(terms: Sequence[str]) -> str | None:
    """The FTS5 MATCH expression for these terms: each quoted, joined with OR; None for none."""
    if not terms:
        return None
    return " OR ".join(f'"{term}"' for term in terms)


def match_expression(query: str) -> str | None:
    """The FTS5 MATCH expression for a query, or None when it has no letter or digit at all."""
    return terms_expression(query_terms(query))


@dataclass(frozen=True)
class Query:
    """A recall query, split once: its text as the model wrote it, its terms and their MATCH
    expression (None when it has no term: nothing is searched). recall.py makes it, and topk,
    textcut and the recall modes take their terms from it."""

    text: str
    terms: tuple[str, ...]
    expression: str | None

    @classmethod
    def parse(cls, text: str) -> "Query":
        terms = tuple(query_terms(text))
        return cls(text=text, terms=terms, expression=terms_expression(terms))


def _first_match(text: str, terms: Sequence[str], table: Table = SPEC) -> int:
    """Where the first token that table's tokenizer matches to one of the terms starts (folded
    and, where the table stems, stemmed: as FTS5 found the row), else 0."""
    # FTS5's highlight() hands its text back as a C string, cut at the first NUL, so a match after
    # one was never found. NUL and space are both separators to every tokenizer, and the swap
    # keeps each character's offset.
    return first_match(text.replace("\x00", " "), terms_expression(terms), table)


def _reach(text: str, start: int, budget: int) -> int:
    """The end of the longest run of text from start shown in at most budget characters."""
    used, end = 0, start
    while end < len(text):
        used += shown_width(text, end)
        if used > budget:
            break
        end += 1
    return end


def _back(text: str, end: int, budget: int) -> int:
    """The start of the longest run of text up to end shown in at most budget characters."""
    used, start = 0, end
    while start > 0:
        used += shown_width(text, start - 1)
        if used > budget:
            break
        start -= 1
    return start


def window(text: str, position: int, limit: int, *, whole: bool) -> str:
    """The window of text around position: up to _LEAD shown characters before it, at most limit
    shown characters in all, an ellipsis at each cut end. whole: text is the record's whole text,
    so a window that reaches its end is widened back to take the full limit."""
    start = _back(text, position, _LEAD)
    if start == 0:
        return text[: _reach(text, 0, limit - 1)] + ELLIPSIS
    if whole and _reach(text, start, limit - 1) == len(text):
        return ELLIPSIS + text[_back(text, len(text), limit - 1) :]
    return ELLIPSIS + text[start : _reach(text, start, limit - 2)] + ELLIPSIS


def snippet(
    text: str, terms: Sequence[str], limit: int = SNIPPET_LIMIT, table: Table = SPEC
) -> str:
    """The text when it is shown in limit characters, else a window around the first token
    matching a term in table's tokenizer (the spec's hits by default), with an ellipsis at each
    cut end; never longer than limit characters as recall shows it. Trimmed as the parse trims
    (proto.trim), so a control at an edge is shown and the words shown are the ones forget and
    promote take by text."""
    text = trim(text)
    if len(text) <= limit and _reach(text, 0, limit) == len(text):
        return text
    return window(text, _first_match(text, terms, table), limit, whole=True)
