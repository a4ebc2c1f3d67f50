"""The arg of an owner command: an id is only ever an id; a refused file name is said in words."""

import json

import pytest

from memoryd.errors import AdminRefused
from memoryd.owner.args import FILE_NAME_RULE, IdArg, parse
from proto.version import package_version


@pytest.mark.parametrize("command", ["undo", "accept", "reject"])
@pytest.mark.parametrize("ident", ["{", "{x", "{2026-09-24-0001", "{" * 5000])
def test_an_id_that_starts_with_a_brace_is_an_id_not_json(command, ident):
    assert parse(command, ident) == IdArg(id=ident[:64])


@pytest.mark.parametrize("command", ["undo", "accept", "reject"])
def test_the_json_form_is_still_read_as_json(command):
    assert parse(command, json.dumps({"id": "2026-09-24-0001", "json": True})) == IdArg(
        id="2026-09-24-0001", json=True
    )


@pytest.mark.parametrize("command", ["undo", "accept", "reject"])
def test_no_id_is_said_so_not_answered_about_an_id_never_given(command):
    with pytest.raises(AdminRefused) as refused:
        parse(command, "")
    assert str(refused.value) == f"refused: {command} takes an id; none was given"


@pytest.mark.parametrize("command", ["log", "search", "restore"])
def test_a_brace_that_is_not_json_is_still_refused_for_other_commands(command):
    with pytest.raises(AdminRefused) as refused:
        parse(command, "{" * 5000)
    assert str(refused.value) == f"refused: the argument of {command} is not valid JSON"


@pytest.mark.parametrize("command", ["restore", "import"])
@pytest.mark.parametrize("name", ["my backup.tar.gz", "-x.tar.gz", "é.jsonl", "a" * 129, ".."])
def test_a_file_name_memoryd_does_not_take_is_refused_in_words(command, name):
    with pytest.raises(AdminRefused) as refused:
        parse(command, json.dumps({"name": name}))
    text = str(refused.value)
    assert FILE_NAME_RULE in text and "pattern" not in text and "\n" not in text


@pytest.mark.parametrize("name", ["memory-20261203T044335Z.tar.gz", ".incoming-ab12.jsonl", "A"])
def test_the_names_bxctl_hands_over_are_taken(name):
    assert parse("restore", json.dumps({"name": name})).name == name  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("command", "arg"),
    [
        ("export", json.dumps({"out": "x.jsonl", "remove_older": 3, "sideways": 1})),
        ("log", json.dumps({"n": 3, "since": "yesterday"})),
        ("vacuum", ""),
    ],
)
def test_what_a_newer_bxctl_sends_is_refused_with_which_side_to_upgrade(command, arg):
    with pytest.raises(AdminRefused) as refused:
        parse(command, arg)
    text = str(refused.value)
    assert f"memoryd {package_version()} does not know it" in text
    assert "scripts/stack up" in text and "\n" not in text


@pytest.mark.parametrize(
    ("command", "arg"), [("log", json.dumps({"n": 0})), ("forget", json.dumps({"id": 3}))]
)
def test_a_wrong_value_is_not_taken_for_a_newer_bxctl(command, arg):
    with pytest.raises(AdminRefused) as refused:
        parse(command, arg)
    assert "does not know it" not in str(refused.value)


@pytest.mark.parametrize("digits", [4_300, 4_301, 5_000, 100_000])
def test_a_log_number_of_any_length_is_refused_in_the_sentence(digits):
    """int() raises past 4,300 digits; a number that long is only out of range, as any other."""
    arg = "9" * digits
    with pytest.raises(AdminRefused) as refused:
        parse("log", arg)
    assert str(refused.value) == f"log takes a number of edits from 1 to 10000, not {arg[:32]!r}"


@pytest.mark.parametrize(("arg", "n"), [("1", 1), ("10000", 10_000), ("0" * 5_000 + "25", 25)])
def test_a_log_number_in_range_is_taken_with_its_leading_zeros(arg, n):
    assert parse("log", arg).n == n
