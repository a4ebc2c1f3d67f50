"""Which language a question is written in, as far as context and hybrid can tell: a small guess.

What those modes read of a question is English: the stopwords they drop (stopwords.py) and the
grammatical person they read (person.py). Asked in German, "In welchem Stadtteil wohne ich
jetzt?" kept "welchem", "ich" and "jetzt" as content words and ranked the turns holding "jetzt"
above the one that answers; asked in Spanish, "¿Cuánto me dijiste…?" was read as about the
owner's own turns because "me" is the English first person. So a question's words are counted
in each language's stopword list (Snowball's lists, STOPWORDS-LICENSE.txt), and the list that
holds the most of them is the question's language.

English is the guess for ties and doubt: another language wins only when its list holds at least
MIN_WORDS of the question's distinct words and more of them than the English list does. An
English question holds many English function words ("what", "did", "I", "the"), which the
other lists mostly lack, so its recall stays what it was: every question of the written,
held-out and generated sets of bench/recall_eval is read as English.
Two other languages that tie (Spanish and Portuguese share many words) give the first in
LANGUAGES: the question is not English either way.
"""

import functools
from collections.abc import Iterable
from importlib import resources

ENGLISH = "en"
# Snowball's lists beside this module, stopwords_CODE.txt; English's is NLTK's (stopwords.py).
LANGUAGES = ("de", "es", "fr", "it", "pt", "nl")
# Fewer distinct stopwords of another language than this is doubt: English.
MIN_WORDS = 2


@functools.cache
def stopwords_of(language: str) -> frozenset[str]:
    """The stopword list of language (ENGLISH or one of LANGUAGES), lower case, read once."""
    name = f"stopwords_{language}.txt"
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def guess(words: Iterable[str]) -> str:
    """The language of a question split into words (any case): ENGLISH unless another
    language's stopwords are clearly more of them (the module docstring)."""
    distinct = {word.lower() for word in words}
    english = len(distinct & stopwords_of(ENGLISH))
    best, most = ENGLISH, max(english, MIN_WORDS - 1)
    for language in LANGUAGES:
        count = len(distinct & stopwords_of(language))
        if count > most:
            best, most = language, count
    return best
