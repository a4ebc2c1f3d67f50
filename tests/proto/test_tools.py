"""The recall and memory argument parsers: every shape and limit of spec 5."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proto.errors import InvalidArguments
from proto.tools import (
    ENTRIES_MAX,
    FILE_CHARS_MAX,
    K_MAX,
    QUERY_MAX,
    parse_json_object,
    parse_memory,
    parse_recall,
    parse_tool,
)


@pytest.mark.parametrize(
    "args,query,k",
    [
        ({"query": "launch window"}, "launch window", 5),
        ({"query": "x", "k": 1}, "x", 1),
        ({"query": "q" * 500, "k": 10}, "q" * 500, 10),
    ],
)
def test_recall_accepts(args, query, k):
    parsed = parse_recall(json.dumps(args))
    assert (parsed.query, parsed.k) == (query, k)


@pytest.mark.parametrize(
    "text,names",
    [
        ('{"query": ""}', "query"),
        (json.dumps({"query": "q" * 501}), "query"),
        ('{"query": "x", "k": 0}', "k"),
        ('{"query": "x", "k": 11}', "k"),
        ('{"query": "x", "k": "5"}', "k"),
        ('{"query": "x", "k": 5.0}', "k"),
        ('{"query": "x", "k": true}', "k"),
        ('{"k": 3}', "query"),
        ('{"query": "x", "limit": 3}', "limit"),
        ('{"query": 7}', "query"),
        ("[1]", "object"),
        ("not json", "JSON"),
    ],
)
def test_recall_refuses_naming_the_problem(text, names):
    with pytest.raises(InvalidArguments) as e:
        parse_recall(text)
    assert names in str(e.value)
    assert str(e.value).startswith("recall:")


GOOD_MEMORY = [
    {"action": "add", "file": "memory", "text": "Owner prefers UTC."},
    {"action": "add", "file": "user", "text": "x"},
    {"action": "replace", "file": "memory", "old": "a", "text": "b"},
    {"action": "remove", "file": "user", "old": "a"},
    {"action": "note", "text": "n" * 1000},
    {
        "action": "consolidate",
        "file": "memory",
        "entries": [
            {"old": "a", "keep": True},
            {"old": "b", "text": "b2"},
            {"old": "c", "move": True},
            {"old": "d", "drop": True},
            {"text": "new"},
        ],
    },
]


@pytest.mark.parametrize("args", GOOD_MEMORY, ids=lambda a: a["action"])
def test_memory_accepts(args):
    parsed = parse_memory(json.dumps(args))
    assert parsed.action == args["action"]


NOTE_RULE = "memory: note.text: a note is 1 to 1,000 characters; this one is"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("n" * 1_000 + "\n", None),  # 1,000 as stored: the final newline is trimmed
        ("\u3000" + "n" * 1_000, None),
        ("\x1f" + "n" * 999, None),  # 1,000: a control is no white space (the check refuses it)
        ("   ", f"{NOTE_RULE} 0"),
        (
            " " + "n" * 1_001,
            "memory: note.text: a note is 1 to 1,000 characters; this one is 1,001",
        ),
        ("n" * 1_001, "memory: note.text: a note is 1 to 1,000 characters; this one is 1,001"),
    ],
)
def test_a_note_is_counted_trimmed_as_memoryd_counts_it(text, said):
    call = json.dumps({"action": "note", "text": text})
    if said is None:
        assert parse_memory(call).text == text
        return
    with pytest.raises(InvalidArguments) as e:
        parse_memory(call)
    assert str(e.value) == said


def test_consolidate_choices():
    parsed = parse_memory(json.dumps(GOOD_MEMORY[-1]))
    assert [e.choice for e in parsed.entries] == ["keep", "rewrite", "move", "drop", "new"]


@pytest.mark.parametrize(
    "args,names",
    [
        ({"action": "add", "file": "soul", "text": "x"}, "file"),
        ({"action": "add", "file": "memory"}, "text"),
        ({"action": "add", "file": "memory", "text": ""}, "text"),
        ({"action": "add", "text": "x"}, "file"),
        ({"action": "replace", "file": "memory", "text": "x"}, "old"),
        ({"action": "remove", "file": "memory", "old": "a", "text": "x"}, "text"),
        ({"action": "note", "text": ""}, "text"),
        ({"action": "note", "text": "n" * 1001}, "text"),
        ({"action": "note", "file": "memory", "text": "x"}, "file"),
        ({"action": "erase", "file": "memory"}, "action"),
        ({"file": "memory", "text": "x"}, "action"),
        ({"action": "consolidate", "file": "memory", "entries": []}, "entries"),
        ({"action": "consolidate", "file": "memory"}, "entries"),
        (
            {"action": "consolidate", "file": "memory", "entries": [{"old": "a"}]},
            "exactly one of keep, text, move, drop",
        ),
        (
            {
                "action": "consolidate",
                "file": "memory",
                "entries": [{"old": "a", "keep": True, "drop": True}],
            },
            "exactly one",
        ),
        (
            {"action": "consolidate", "file": "memory", "entries": [{"keep": True}]},
            "text alone",
        ),
        (
            {"action": "consolidate", "file": "memory", "entries": [{"old": "a", "keep": False}]},
            "keep",
        ),
        (
            {"action": "consolidate", "file": "memory", "entries": [{"old": "a", "stay": True}]},
            "stay",
        ),
    ],
)
def test_memory_refuses_naming_the_problem(args, names):
    with pytest.raises(InvalidArguments) as e:
        parse_memory(json.dumps(args))
    assert names in str(e.value)


def test_parse_tool_dispatches_and_refuses_others():
    assert parse_tool("recall", '{"query": "x"}').k == 5
    assert parse_tool("memory", '{"action": "note", "text": "x"}').text == "x"
    with pytest.raises(InvalidArguments):
        parse_tool("http_fetch", "{}")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["action", "file", "text", "old", "entries", "keep", "move", "query", "k"]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_fuzz_parsers_raise_only_invalid_arguments(value):
    text = json.dumps(value)
    for parse in (parse_recall, parse_memory):
        try:
            parse(text)
        except InvalidArguments:
            pass


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=50))
def test_fuzz_parsers_on_raw_text(text):
    for parse in (parse_recall, parse_memory):
        try:
            parse(text)
        except InvalidArguments:
            pass


# One JSON-object parser for every role: proto's memory tools, loopd-shim's local tools and
# call_tool, brokerd-shim's other tools.
@pytest.mark.parametrize(
    ("text", "tool", "blank", "problem"),
    [
        ("[1]", None, False, "arguments must be a JSON object"),
        ("{", None, False, "arguments are not valid JSON"),
        ("[" * 100_000, "clock", True, "clock: arguments are not valid JSON"),
        ('"x"', "recall", False, "recall: arguments must be a JSON object"),
        ("  ", "recall", False, "recall: arguments are not valid JSON"),
        (b"{}", "memory", False, "memory: arguments must be JSON text"),
    ],
)
def test_parse_json_object_refuses_naming_the_tool(text, tool, blank, problem):
    with pytest.raises(InvalidArguments) as refused:
        parse_json_object(text, tool, blank_is_empty=blank)
    assert str(refused.value) == problem


def test_parse_json_object_blank_is_empty_only_when_asked():
    assert parse_json_object(" \n", "clock", blank_is_empty=True) == {}
    assert parse_json_object('{"a": [1]}') == {"a": [1]}


def test_every_role_uses_the_one_parser():
    from brokerd_shim.decide import decide
    from loopd_shim import core_tools

    assert core_tools.parse_json_object is parse_json_object
    assert decide.__globals__["parse_json_object"] is parse_json_object
    assert "_parse_other" not in decide.__globals__


def test_arguments_longer_than_any_valid_call_are_refused_before_parsing():
    entries = [{"old": "x"}] * 60_000
    huge = json.dumps({"action": "consolidate", "file": "memory", "entries": entries})
    with pytest.raises(InvalidArguments) as refused:
        parse_memory(huge)
    assert str(refused.value) == (
        f"memory: arguments of {len(huge):,} characters are over the limit of 131,072; no valid"
        " memory call is as long"
    )
    with pytest.raises(InvalidArguments, match=r"^recall: arguments of 10,001 characters"):
        parse_recall(json.dumps({"query": "q" * 9_988}))


def test_the_longest_valid_calls_fit_even_escaped_as_memoryd_writes_them_again():
    astral = "\U0001f600"  # 12 characters once json.dumps escapes it
    longest = [
        {"query": astral * QUERY_MAX, "k": K_MAX},
        {
            "action": "consolidate",
            "file": "memory",
            "entries": [{"old": astral * FILE_CHARS_MAX, "text": astral * FILE_CHARS_MAX}],
        },
        {
            "action": "consolidate",
            "file": "memory",
            "entries": [
                *({"old": chr(0x1F600 + n), "move": True} for n in range(ENTRIES_MAX // 2)),
                *({"text": chr(0x1F000 + n)} for n in range(ENTRIES_MAX // 2)),
            ],
        },
    ]
    for args in longest:
        tool = "recall" if "query" in args else "memory"
        text = json.dumps(args, indent=1)
        assert parse_tool(tool, text) is not None


def test_the_bounds_follow_memoryds_file_limits():
    from memoryd.memory.entries import JOINER, LIMITS

    assert FILE_CHARS_MAX == max(LIMITS["memory.md"], LIMITS["user.md"])
    most = ENTRIES_MAX // 2  # one-character entries of the larger file, each named once
    assert len(JOINER.join("x" * most)) <= FILE_CHARS_MAX < len(JOINER.join("x" * (most + 1)))


def test_a_consolidate_of_more_entries_than_a_file_holds_is_refused_in_one_line():
    args = {"action": "consolidate", "file": "user", "entries": [{"text": "x"}] * (ENTRIES_MAX + 1)}
    with pytest.raises(InvalidArguments) as refused:
        parse_memory(json.dumps(args))
    assert str(refused.value).startswith(f"memory: {ENTRIES_MAX + 1:,} entries are over the limit")
    many = {**args, "entries": [{"text": "x"}] * ENTRIES_MAX}
    assert len(parse_memory(json.dumps(many)).entries) == ENTRIES_MAX


def test_many_problems_are_named_first_few_and_counted():
    keys = {f"colour{n}": n for n in range(300)}
    with pytest.raises(InvalidArguments) as refused:
        parse_memory(json.dumps({"action": "note", "text": "x", **keys}))
    assert str(refused.value) == (
        "memory: note.colour0: unknown key; note.colour1: unknown key; note.colour2: unknown key;"
        " note.colour3: unknown key; note.colour4: unknown key; and 295 more problems"
    )
    entries = [{"old": n, "keep": True} for n in range(200)]
    with pytest.raises(InvalidArguments) as refused:
        parse_memory(json.dumps({"action": "consolidate", "file": "memory", "entries": entries}))
    text = str(refused.value)
    assert "entries.0.old: Input should be a valid string" in text
    assert text.endswith("and 195 more problems")


NOT_TEXT = "holds half of a surrogate pair, which is not text"


@pytest.mark.parametrize(
    "tool, arguments, said",
    [
        ("memory", '{"action":"note","text":"x\\udc00y"}', f"memory: text: the string {NOT_TEXT}"),
        (
            "memory",
            '{"action":"add","file":"memory","text":"\\udc00"}',
            f"memory: text: the string {NOT_TEXT}",
        ),
        (
            "memory",
            '{"action":"replace","file":"user","old":"a\\ud800","text":"b"}',
            f"memory: old: the string {NOT_TEXT}",
        ),
        (
            "memory",
            '{"action":"remove","file":"user","old":"\\uDFFF"}',
            f"memory: old: the string {NOT_TEXT}",
        ),
        ("memory", '{"action":"note","text":"ok","\\udc00":1}', f"memory: a key {NOT_TEXT}"),
        ("memory", '{"action":"not\\udc00"}', f"memory: action: the string {NOT_TEXT}"),
        (
            "memory",
            '{"action":"consolidate","file":"memory","entries":[{"old":"a","keep":true},'
            '{"old":"b","text":"c \\udc00"}]}',
            f"memory: entries.1.text: the string {NOT_TEXT}",
        ),
        (
            "memory",
            '{"action":"consolidate","file":"memory","entries":[{"text":"c","\\udc00":true}]}',
            f"memory: a key of entries.0 {NOT_TEXT}",
        ),
        (
            "recall",
            '{"query":"half an emoji \\ud83d here"}',
            f"recall: query: the string {NOT_TEXT}",
        ),
        ("memory", '{"action":"note","text":"raw \udc00"}', f"memory: text: the string {NOT_TEXT}"),
    ],
)
def test_a_lone_surrogate_in_any_field_or_key_is_refused_naming_it(tool, arguments, said):
    """JSON can spell half of a surrogate pair; no file, audit line or frame can hold it, so the
    parse refuses it in every field and key of every action, note's text included."""
    with pytest.raises(InvalidArguments) as refused:
        parse_tool(tool, arguments)
    assert str(refused.value) == said


def test_a_lone_surrogate_is_refused_for_every_other_tool_too():
    with pytest.raises(InvalidArguments) as refused:
        parse_json_object('{"url": "https://example.org/\\udc00"}')
    assert str(refused.value) == f"url: the string {NOT_TEXT}"
    with pytest.raises(InvalidArguments) as refused:
        parse_json_object('{"a": [{"b": ["ok", "\\ud800"]}]}', "clock", blank_is_empty=True)
    assert str(refused.value) == f"clock: a.0.b.1: the string {NOT_TEXT}"
    deep = '{"x":' + "[" * 40 + '"\\ud800"' + "]" * 40 + "}"
    with pytest.raises(InvalidArguments) as refused:
        parse_json_object(deep)
    assert str(refused.value) == f"x.0.0.0.0.0.0.0... (33 more levels): the string {NOT_TEXT}"


def test_a_whole_surrogate_pair_and_an_escaped_backslash_are_text():
    assert (
        parse_memory('{"action":"note","text":"an emoji \\ud83d\\ude00"}').text
        == "an emoji \U0001f600"
    )
    assert parse_recall('{"query":"\\\\ud800 as written"}').query == "\\ud800 as written"


_CHARS = st.sampled_from(["a", "\U0001f600", "\ud83d", "\ude00", "\udfff", "\\", '"', "\n"])


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.text(_CHARS, max_size=6),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.text(_CHARS, max_size=3), inner, max_size=3)
        ),
        max_leaves=10,
    ),
    st.booleans(),
)
def test_a_parse_refuses_exactly_what_has_no_utf8_form(value, ascii_only):
    """Arguments a parse lets through always encode, so the writes after it cannot fail on them;
    and only arguments that do not are refused (a pair's halves side by side are one character)."""
    text = json.dumps({"v": value}, ensure_ascii=ascii_only)
    as_read = json.loads(text)
    try:
        json.dumps(as_read, ensure_ascii=False).encode("utf-8")
        encodes = True
    except UnicodeEncodeError:
        encodes = False
    try:
        assert parse_json_object(text) == as_read
    except InvalidArguments as e:
        assert NOT_TEXT in str(e) and not encodes
    else:
        assert encodes
