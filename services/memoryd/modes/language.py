"""Which language a question is written in, as far as context and hybrid can tell: a small guess.

What those modes read of a question is English: the stopwords they drop (stopwords.py) and the
grammatical person they read (person.py). Asked in German, "In welchem Stadtteil wohne ich
jetzt?" kept "welchem", "ich" and "jetzt" as content words and ranked the turns holding "jetzt"
above the one that answers; asked in Spanish, "¿Cuánto me dijiste…?" was read as about the
owner's own turns because "me" is the English first person. So a question's words are counted
in each language's stopword list (Snowball's lists, STOPWORDS-LICENSE.txt), and the list that
holds the most of them is the question's language.

English is the guess for ties and doubt: another language wins only when its list holds more of
the question's distinct words than the English list does, at least MIN_WORDS of them words the
English list lacks (a shared "in", "is", "was" or "me" says nothing). A capitalised word after the
first is a name or a title ("Did Van die?", "was Die Hard good?") and is not counted. An
English question holds many English function words ("what", "did", "I", "the"), which the
other lists mostly lack, so its recall stays what it was: every question of the written,
held-out and generated sets of bench/recall_eval is read as English.
Two other languages that tie (Spanish and Portuguese share many words) give the first in
LANGUAGES: the question is not English either way.
"""

import functools
from collections.abc import Sequence
from importlib import resources

ENGLISH = "en"
# Snowball's lists beside this module, stopwords_CODE.txt; English's is NLTK's (stopwords.py).
LANGUAGES = ("de", "es", "fr", "it", "pt", "nl")
# Fewer distinct stopwords of another language than this, not counting those English holds too,
# is doubt: English.
MIN_WORDS = 2
# Letters English words are not written with: a word holding one is evidence of another language
# (a name holding one is passed over with the other capitalised words).
MARKED = frozenset("áéíóúñüöäßçãõàèìòùâêîôûëïœ")


@functools.cache
def stopwords_of(language: str) -> frozenset[str]:
    """The stopword list of language (ENGLISH or one of LANGUAGES), lower case, read once."""
    name = f"stopwords_{language}.txt"
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def guess(words: Sequence[str]) -> str:
    """The language of a question split into words, in order and as typed: ENGLISH unless
    another language's stopwords are clearly more of them (the module docstring)."""
    # A capitalised word after the first is a name or a title ("Did Van die?", "was Die Hard
    # good?"): not the question's own grammar, whatever list holds it.
    kept = {word.lower() for i, word in enumerate(words) if i == 0 or not word[:1].isupper()}
    english_words = stopwords_of(ENGLISH)
    english = len(kept & english_words)
    marked = any(ch in MARKED for word in kept for ch in word)
    best, most = ENGLISH, english
    for language in LANGUAGES:
        held = kept & stopwords_of(language)
        # Words English holds too ("in", "is", "was", "me") say nothing of another language.
        own = len(held - english_words)
        if own and marked:
            own += 1  # a letter English does not write ("Cuánto") counts as one more
        if own >= MIN_WORDS and len(held) > most:
            best, most = language, len(held)
    return best
