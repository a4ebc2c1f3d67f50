"""The query terms of the context and hybrid modes: the spec's terms without the stopwords of
the question's language, unless nothing would be left. English's list is NLTK's 179 words;
German, Spanish, French, Italian, Portuguese and Dutch have Snowball's (STOPWORDS-LICENSE.txt);
the language is guessed from the question's own words (language.py), English when in doubt.
The lists are data files beside this module, each read once."""

from collections.abc import Sequence

from memoryd.modes import language
from memoryd.search.query import query_terms


def stopwords() -> frozenset[str]:
    """The English list: what a capitalised word must not be to be read as a name."""
    return language.stopwords_of(language.ENGLISH)


def content_terms(query: str) -> list[str]:
    """The query's terms (as the spec splits them) less the stopwords; all of them when every
    term is a stopword ("who is she"), so such a query still finds something."""
    return without_stopwords(query_terms(query))


def without_stopwords(terms: Sequence[str]) -> list[str]:
    """Terms already split (query.Query.terms) less the stopwords of their language; all of them
    when every term is a stopword."""
    words = language.stopwords_of(language.guess(terms))
    kept = [term for term in terms if term.lower() not in words]
    return kept or list(terms)
