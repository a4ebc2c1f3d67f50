"""context and hybrid read a question in its own language or not at all: the stopwords dropped
are those of the language its words are guessed to be in, and the grammatical person (person.py)
is read only in English, so a Spanish "me" ("¿Cuánto me dijiste…?": what the agent said) does not
favour the owner's own turns. English questions, and any doubt, stay English: their query and
their role are what they were. And for a question in another language, whose person and stems
the mode does not read, the spec's first rows stay in the top five: the mode adds, never takes
away."""

import json
import sys
from pathlib import Path

import pytest

from memoryd.modes import arrange, context, language, person
from memoryd.modes.stopwords import content_terms, without_stopwords
from memoryd.search.query import Query, query_terms

WRITTEN = Path(__file__).resolve().parents[2] / "bench" / "recall_eval"

OTHER = [
    ("In welchem Stadtteil wohne ich jetzt?", "de"),
    ("Was für ein Rad fahre ich zurzeit?", "de"),
    ("Welche Formulare hast du mir für meine Nebeneinkünfte genannt?", "de"),
    ("Wann habe ich Brot gebacken?", "de"),
    ("¿Cuánto me cuesta el alquiler actualmente?", "es"),
    ("¿Cuánto me dijiste que podía costar una buena silla de oficina usada?", "es"),
    ("¿Cuál era la proporción de líquido por arroz que me diste para el plato al horno?", "es"),
    ("Qu'est-ce que tu m'as conseillé pour mon dos ?", "fr"),
    ("Quando ho comprato la mia bicicletta?", "it"),
    ("Quanto eu pago pela minha casa agora?", "pt"),
    ("Wat heb je mij aangeraden voor mijn rug?", "nl"),
]
ENGLISH = [
    "What degree did I graduate with?",
    "Which hotel did you suggest for my weekend in Porto?",
    "In our chat about tomatoes, which variety was earliest?",
    "Was it in May or June that I moved?",
    "Die Hard or Alien: which did I watch first?",
    "Where is the con in Madrid?",
    "How much is my rent now?",
    # Names and titles that are another language's stopwords, and words English shares with it.
    "Did Van die?",
    "was Die Hard good?",
    "Is Van in Den Haag?",
    "El Camino or La La Land?",
    "Come in Marta",
    "Did the van die again?",
    "wt?",
    "",
]


@pytest.mark.parametrize(("question", "code"), OTHER)
def test_a_question_in_another_language_is_guessed_as_it(question, code):
    assert language.guess(query_terms(question)) == code


@pytest.mark.parametrize("question", ENGLISH)
def test_english_and_doubt_stay_english(question):
    assert language.guess(query_terms(question)) == language.ENGLISH


@pytest.mark.parametrize(("question", "code"), OTHER)
def test_another_languages_question_favours_no_one(question, code):
    assert person.role(question) is None


def test_an_english_question_naming_a_title_is_still_read_for_its_person():
    assert person.role("Did I like Die Hard?") == "user"
    assert person.role("What did you say about El Camino?") == "assistant"


@pytest.mark.parametrize(
    ("question", "role"),
    [
        ("What degree did I graduate with?", "user"),
        ("Which hotel did you suggest for my weekend in Porto?", "assistant"),
        ("How much is my rent now?", "user"),
    ],
)
def test_an_english_questions_person_is_read_as_before(question, role):
    assert person.role(question) == role


def test_the_questions_own_stopwords_are_dropped():
    assert content_terms("In welchem Stadtteil wohne ich jetzt?") == ["Stadtteil", "wohne"]
    assert content_terms("¿Cuánto me cuesta el alquiler actualmente?") == [
        "Cuánto",
        "cuesta",
        "alquiler",
        "actualmente",
    ]


def test_an_english_query_loses_the_english_stopwords_alone():
    english = language.stopwords_of(language.ENGLISH)
    terms = query_terms("Was it in May or June that I moved to the house on Die Straße?")
    assert without_stopwords(terms) == [t for t in terms if t.lower() not in english]


def test_every_list_is_there_and_lower_case():
    for code in (language.ENGLISH, *language.LANGUAGES):
        words = language.stopwords_of(code)
        assert len(words) > 90
        assert all(word == word.lower() and " " not in word for word in words)


def _questions(folder: Path) -> list[str]:
    found = []
    for path in sorted(folder.rglob("*.json")):
        found += [q["question"] for q in json.loads(path.read_text("utf-8"))["questions"]]
    return found


@pytest.mark.parametrize(
    "folder", ["written", "written_heldout", "written_shapes/tech", "written_shapes/terse"]
)
def test_every_written_english_question_is_read_as_english(folder):
    questions = _questions(WRITTEN / folder)
    assert questions
    for question in questions:
        assert language.guess(query_terms(question)) == language.ENGLISH, question


def _arranged(question: str) -> list[int]:
    """context's keep for a mode's own order of ten rows (1 to 10) and a spec that ranks four
    others (21 to 24) first and is sure of none of them."""
    where = {rowid: arrange.Place("mm-s", rowid, False, "user") for rowid in range(1, 25)}
    spec = arrange.SpecRanking([21, 22, 23, 24], sure=frozenset())
    order = list(range(1, 11))
    return context.keep(order, spec, where, Query.parse(question), context.KEEP_SPEC, 10)


def test_a_question_the_mode_cannot_read_keeps_the_specs_first_rows_in_the_top_five():
    # English: rows the spec is not sure of are kept at the end of the ten, as before.
    assert _arranged("Where do I live now?")[:5] == [1, 2, 3, 4, 5]
    assert set(_arranged("Where do I live now?")) >= {21, 22, 23, 24}
    # German: the spec's first four are in the top five whether or not it is sure of them.
    top = _arranged("In welchem Stadtteil wohne ich jetzt?")
    assert top[:5] == [1, 21, 22, 23, 24]
    assert len(top) == 10


def test_every_generated_question_is_read_as_english():
    sys.path.insert(0, str(WRITTEN.parent))
    try:
        from recall_eval.shapes import SHAPES, conversation
    finally:
        sys.path.remove(str(WRITTEN.parent))
    for shape in SHAPES:
        for seed in range(1, 11):
            for question in conversation(shape, seed).questions:
                terms = query_terms(question.text)
                assert language.guess(terms) == language.ENGLISH, question.text
