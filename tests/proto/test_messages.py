"""Message kinds: every kind round-trips through a frame; unknown kinds and keys are refused."""

import pytest

from proto.errors import InvalidMessage
from proto.frames import decode_payload, encode_frame
from proto.messages import KINDS, body_of, is_session_id, kind_of, parse_body

REQUEST = {"session": "mm-1", "call_id": "c1", "tool": "recall", "arguments": '{"query":"x"}'}
LABEL = {"class": "private", "untrusted": True}

EXAMPLES = {
    "memory_block": {},
    "memory_block_reply": {"text": "# soul.md\nhello"},
    "session_updated": {"session": "mm-8ass9m"},
    "ok": {},
    "memory_call": {"request": REQUEST, "taint": "secret", "untrusted": True},
    "tool_response": {"call_id": "c1", "ok": True, "output": "noted", "label": LABEL},
    "reindex": {},
    "reindexed": {"logs": 42, "records": 1208, "notes": 7},
    "memory_admin": {"command": "undo", "arg": "2026-09-24-0001"},
    "memory_admin_reply": {"text": "undone"},
    "tool_request": {"request": REQUEST},
    "error": {"text": "no"},
    "session_start": {"session": None},
    "session_started": {"session": "s-1", "system": "sys", "tools": [{"name": "clock"}]},
    "owner_message": {"session": "s-1", "content": "hi"},
    "assistant_message": {
        "session": "s-1",
        "content": None,
        "reasoning_content": None,
        "tool_calls": [{"id": "c1", "name": "recall", "arguments": "{}"}],
    },
    "assistant_results": {
        "results": [{"call_id": "c1", "name": "recall", "ok": True, "output": "x", "label": LABEL}]
    },
}


def test_every_kind_has_an_example():
    assert set(EXAMPLES) == set(KINDS)


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_round_trip_every_kind(kind):
    model = parse_body(kind, EXAMPLES[kind])
    assert kind_of(model) == kind
    frame = encode_frame(kind, body_of(model))
    assert decode_payload(frame[4:]) == (kind, EXAMPLES[kind])


def test_tool_response_label_may_be_null():
    body = {"call_id": "c", "ok": False, "output": "x", "label": None}
    assert body_of(parse_body("tool_response", body)) == body


@pytest.mark.parametrize(
    "kind,body,field",
    [
        ("memory_block", {"x": 1}, "x"),
        ("session_updated", {"session": "../etc"}, "session"),
        ("session_updated", {}, "session"),
        ("memory_call", {"request": REQUEST, "taint": "top", "untrusted": False}, "taint"),
        ("memory_call", {"request": REQUEST, "taint": "private", "untrusted": 1}, "untrusted"),
        ("memory_admin", {"command": "drop", "arg": ""}, "command"),
        ("reindexed", {"logs": -1, "records": 0, "notes": 0}, "logs"),
        ("tool_response", {"call_id": "c", "ok": True, "output": "x"}, "label"),
        ("tool_request", {"request": {**REQUEST, "session": ""}}, "session"),
    ],
)
def test_invalid_bodies_name_the_field(kind, body, field):
    with pytest.raises(InvalidMessage) as e:
        parse_body(kind, body)
    assert field in str(e.value)


def test_unknown_kind_refused():
    with pytest.raises(InvalidMessage, match="unknown message kind"):
        parse_body("drop_tables", {})


@pytest.mark.parametrize(
    "value,ok",
    [
        ("mm-8ass9m", True),
        ("a", True),
        ("A_b-9", True),
        ("a" * 128, True),
        ("a" * 129, False),
        ("", False),
        ("-abc", False),
        ("_abc", False),
        ("../x", False),
        ("a/b", False),
        ("a.b", False),
        ("abc\n", False),
        ("ábc", False),
        (5, False),
    ],
)
def test_session_ids(value, ok):
    assert is_session_id(value) is ok
    if isinstance(value, str):
        try:
            parse_body("session_updated", {"session": value})
            parsed = True
        except InvalidMessage:
            parsed = False
        assert parsed is ok


@pytest.mark.parametrize("command", ["vacuum", "x" * 500, "LOG"])
def test_an_owner_command_this_version_does_not_know_is_named_with_what_to_restart(command):
    with pytest.raises(InvalidMessage) as refused:
        parse_body("memory_admin", {"command": command, "arg": ""})
    text = str(refused.value)
    assert text.startswith(f"unknown owner command {command[:32]!r} (memoryd ")
    assert "scripts/stack up" in text and "'log', 'undo'" not in text


def test_a_command_that_is_not_text_is_still_refused_by_the_model():
    with pytest.raises(InvalidMessage, match="invalid memory_admin body: command"):
        parse_body("memory_admin", {"command": 3, "arg": ""})


def test_a_body_with_hundreds_of_problems_names_the_first_few_and_counts_them():
    body = {"session": "s1", "system": "x", "tools": list(range(400))}
    with pytest.raises(InvalidMessage) as refused:
        parse_body("session_started", body)
    text = str(refused.value)
    assert text.startswith("invalid session_started body: tools.0: Input should be a valid dict")
    assert "tools.4: Input should be" in text and text.endswith("and 395 more problems")
    assert len(text) < 500
