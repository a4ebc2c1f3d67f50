"""decide(): the pure decision for one call, as a table of calls, grants and session states."""

import json

import pytest

from brokerd_shim.decide import decide
from brokerd_shim.grants import GrantSet, parse_grant
from brokerd_shim.ledger import SessionState
from proto.labels import Label
from proto.messages import ToolRequest
from proto.tools import AddArgs, ConsolidateArgs, NoteArgs, RecallArgs, RemoveArgs, ReplaceArgs

CLEAN = SessionState("s1", Label(klass="private", untrusted=False))
TAINTED = SessionState("s1", Label(klass="private", untrusted=True))
SECRET = SessionState("s1", Label(klass="secret", untrusted=False))


def grant(grant_id="web", tool="http_fetch", mode="auto", max_taint="private", extra=""):
    text = (
        f'tool = "{tool}"\nmode = "{mode}"\nmax_taint = "{max_taint}"\n'
        f'result_class = "private"\nuntrusted = true\n{extra}'
    )
    return parse_grant(grant_id, text.encode())


def req(tool, arguments):
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return ToolRequest(session="s1", call_id="c1", tool=tool, arguments=arguments)


OWNER = GrantSet(grants=(grant(),))

LONG = "x" * 501
ENTRIES = [
    {"old": "a", "keep": True},
    {"old": "b", "text": "b2"},
    {"old": "c", "move": True},
    {"old": "d", "drop": True},
    {"text": "new"},
]


@pytest.mark.parametrize(
    "tool, arguments, parsed",
    [
        ("recall", {"query": "launch"}, RecallArgs),
        ("recall", {"query": "launch", "k": 10}, RecallArgs),
        ("recall", {"query": "q" * 500, "k": 1}, RecallArgs),
        ("memory", {"action": "add", "file": "memory", "text": "t"}, AddArgs),
        ("memory", {"action": "replace", "file": "user", "old": "o", "text": "t"}, ReplaceArgs),
        ("memory", {"action": "remove", "file": "user", "old": "o"}, RemoveArgs),
        ("memory", {"action": "note", "text": "n" * 1000}, NoteArgs),
        (
            "memory",
            {"action": "consolidate", "file": "memory", "entries": ENTRIES},
            ConsolidateArgs,
        ),
    ],
)
def test_memory_tools_allowed_under_builtins_with_parsed_arguments(tool, arguments, parsed):
    for state in (CLEAN, TAINTED, SECRET):
        decision = decide(OWNER, req(tool, arguments), state)
        assert decision.decision == "allow"
        assert decision.grant.id == f"builtin-{tool}"
        assert isinstance(decision.spec.arguments, parsed)
        assert decision.spec.state == state


@pytest.mark.parametrize(
    "tool, arguments, says",
    [
        ("recall", {}, "query"),
        ("recall", {"query": ""}, "query"),
        ("recall", {"query": LONG}, "query"),
        ("recall", {"query": "q", "k": 0}, "k"),
        ("recall", {"query": "q", "k": 11}, "k"),
        ("recall", {"query": "q", "k": "5"}, "k"),
        ("recall", {"query": "q", "hosts": ["x"]}, "hosts"),
        ("recall", "[1, 2]", "JSON object"),
        ("recall", "{not json", "not valid JSON"),
        ("memory", {"action": "add", "file": "soul", "text": "t"}, "file"),
        ("memory", {"action": "add", "file": "memory"}, "text"),
        ("memory", {"action": "add", "file": "memory", "text": ""}, "text"),
        ("memory", {"action": "note", "text": "n" * 1001}, "text"),
        ("memory", {"action": "erase", "file": "memory"}, "action"),
        ("memory", {"action": "consolidate", "file": "memory", "entries": []}, "entries"),
        (
            "memory",
            {
                "action": "consolidate",
                "file": "memory",
                "entries": [{"old": "a", "keep": True, "drop": True}],
            },
            "exactly one",
        ),
        ("memory", {"action": "note", "text": "t", "paths": ["/"]}, "paths"),
        ("memory", "null", "JSON object"),
    ],
)
def test_malformed_memory_arguments_denied_with_the_grant_label(tool, arguments, says):
    decision = decide(OWNER, req(tool, arguments), CLEAN)
    assert decision.decision == "deny"
    assert decision.spec is None
    assert decision.grant.id == f"builtin-{tool}"
    assert decision.label == Label(klass="private", untrusted=False)
    assert decision.reason.startswith(f"{tool}: ")
    assert says in decision.reason


@pytest.mark.parametrize(
    "grants, tool, arguments, state, outcome, reason",
    [
        (OWNER, "http_fetch", {"url": "https://example.org/notes"}, CLEAN, "allow", None),
        (OWNER, "http_fetch", {"url": "https://example.org/notes"}, TAINTED, "allow", None),
        (OWNER, "http_fetch", {"url": "https://x"}, SECRET, "deny", "holds secret data"),
        (OWNER, "shell", {"cmd": "ls"}, CLEAN, "deny", "no grant allows shell"),
        (
            GrantSet(),
            "http_fetch",
            {"url": "https://x"},
            CLEAN,
            "deny",
            "no grant allows http_fetch",
        ),
        (OWNER, "http_fetch", "[]", CLEAN, "deny", "arguments must be a JSON object"),
        (OWNER, "http_fetch", "{", CLEAN, "deny", "not valid JSON"),
        (
            GrantSet(grants=(grant(mode="deny"),)),
            "http_fetch",
            {"url": "u"},
            CLEAN,
            "deny",
            "grant web denies http_fetch",
        ),
        (
            GrantSet(grants=(grant(mode="ask"),)),
            "http_fetch",
            {"url": "u"},
            CLEAN,
            "ask",
            "needs the owner's approval",
        ),
        (
            GrantSet(grants=(grant(max_taint="secret"),)),
            "http_fetch",
            {"url": "u"},
            SECRET,
            "allow",
            None,
        ),
    ],
)
def test_owner_tools(grants, tool, arguments, state, outcome, reason):
    decision = decide(grants, req(tool, arguments), state)
    assert decision.decision == outcome
    if reason is None:
        assert decision.reason is None and decision.spec.arguments == arguments
    else:
        assert reason in decision.reason and decision.spec is None


def test_invalid_set_denies_everything_memory_tools_included():
    invalid = GrantSet(grants=(grant(),), problems=("mem.toml: the policy ...",))
    for tool, arguments in [
        ("recall", {"query": "q"}),
        ("memory", {"action": "note", "text": "t"}),
        ("http_fetch", {"url": "https://example.org/notes"}),
    ]:
        decision = decide(invalid, req(tool, arguments), CLEAN)
        assert decision.decision == "deny" and decision.grant is None
        assert "runbook: grants-invalid" in decision.reason
        assert "mem.toml" in decision.reason


CONSTRAINED = grant(
    "web-a", extra='constraints = { hosts = ["example.org"], paths = ["/notes"] }\n'
)
PATTERNED = grant("web-b", extra='constraints = { patterns = ["https://docs.example.com/*"] }\n')


@pytest.mark.parametrize(
    "url, chosen",
    [
        ("https://example.org/notes", "web-a"),
        ("https://EXAMPLE.org/notes/2026", "web-a"),
        ("https://example.org/notes/../admin", None),
        ("https://example.org/notesx", None),
        ("https://evil.org/notes", None),
        ("https://docs.example.com/a/b", "web-b"),
        ("not a url", None),
    ],
)
def test_constraints_choose_the_grant(url, chosen):
    grants = GrantSet(grants=(CONSTRAINED, PATTERNED))
    decision = decide(grants, req("http_fetch", {"url": url}), CLEAN)
    if chosen is None:
        assert decision.decision == "deny" and "for this call" in decision.reason
    else:
        assert decision.decision == "allow" and decision.grant.id == chosen
