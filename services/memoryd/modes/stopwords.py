"""A general English stopword list (NLTK's 179 words, see STOPWORDS-LICENSE.txt), and the query
terms of the context and hybrid modes: the spec's terms without stopwords, unless nothing would be
left. The list is a data file beside this module, read once."""

import functools
from collections.abc import Sequence
from importlib import resources

from memoryd.search.query import query_terms


@functools.cache
def stopwords() -> frozenset[str]:
    text = resources.files(__package__).joinpath("stopwords_en.txt").read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def content_terms(query: str) -> list[str]:
    """The query's terms (as the spec splits them) less the stopwords; all of them when every
    term is a stopword ("who is she"), so such a query still finds something."""
    return without_stopwords(query_terms(query))


def without_stopwords(terms: Sequence[str]) -> list[str]:
    """Terms already split (query.Query.terms) less the stopwords; all of them when every term
    is a stopword."""
    words = stopwords()
    kept = [term for term in terms if term.lower() not in words]
    return kept or list(terms)
