"""Grants: the two built-ins, the owner's files, and what makes a set invalid (spec 8)."""

import hashlib
import os

import pytest

from brokerd_shim.builtin import BUILTIN_TEXTS
from brokerd_shim.grants import BUILT_IN_POLICY, GrantsWatcher, load_grants, parse_grant

SPEC_RECALL = (
    "# built in: recall\n"
    'tool = "recall"\n'
    'mode = "auto"\n'
    'max_taint = "secret"\n'
    'result_class = "private"\n'
    "untrusted = false\n"
)

GOOD = (
    'tool = "http_fetch"\nmode = "auto"\nmax_taint = "private"\n'
    'result_class = "private"\nuntrusted = true\n'
)


def test_builtin_texts_are_the_spec_blocks_and_hashed_exactly(tmp_path):
    assert BUILTIN_TEXTS["builtin-recall"] == SPEC_RECALL
    assert BUILTIN_TEXTS["builtin-memory"] == SPEC_RECALL.replace("recall", "memory")
    for grant in load_grants(tmp_path).builtins:
        text = BUILTIN_TEXTS[grant.id].encode()
        assert grant.sha256 == hashlib.sha256(text).hexdigest()
        assert (grant.mode, grant.max_taint, grant.result_class, grant.untrusted) == (
            "auto",
            "secret",
            "private",
            False,
        )
        assert grant.constraints.empty and grant.builtin


def test_builtins_present_with_empty_grants_and_listed_apart(tmp_path):
    grant_set = load_grants(tmp_path)
    assert grant_set.valid
    assert grant_set.grants == ()
    assert [g.id for g in grant_set.builtins] == ["builtin-recall", "builtin-memory"]
    assert [g.id for g in grant_set.candidates("recall")] == ["builtin-recall"]
    assert [g.id for g in grant_set.candidates("memory")] == ["builtin-memory"]


def test_owner_grant_loaded_with_sha_of_its_bytes(tmp_path):
    (tmp_path / "web.toml").write_text(GOOD)
    (tmp_path / "README.md").write_text("not a grant")
    (tmp_path / ".web.toml.swp").write_text("editor junk")
    grant_set = load_grants(tmp_path)
    assert grant_set.valid, grant_set.problems
    (grant,) = grant_set.grants
    assert grant.id == "web" and not grant.builtin
    assert grant.sha256 == hashlib.sha256(GOOD.encode()).hexdigest()
    assert grant.label.to_wire() == {"class": "private", "untrusted": True}
    assert [g.id for g in grant_set.candidates("http_fetch")] == ["web"]


@pytest.mark.parametrize(
    "name, text, problem",
    [
        ("mem.toml", GOOD.replace("http_fetch", "memory"), BUILT_IN_POLICY),
        ("rec.toml", GOOD.replace("http_fetch", "recall"), BUILT_IN_POLICY),
        ("off.toml", GOOD.replace("http_fetch", "memory").replace("auto", "deny"), BUILT_IN_POLICY),
        ("broken.toml", 'tool = "http_fetch\nmode = ', "not valid TOML"),
        ("bin.toml", b"\xff\xfe", "not UTF-8"),
        ("builtin-web.toml", GOOD, "reserved"),
        ("bad id.toml", GOOD, "file name must be"),
        ("m.toml", GOOD.replace('"auto"', '"sometimes"'), "mode must be one of"),
        ("c.toml", GOOD.replace('max_taint = "private"', 'max_taint = "top"'), "max_taint must be"),
        ("r.toml", GOOD.replace('result_class = "private"', "result_class = 3"), "result_class"),
        ("u.toml", GOOD.replace("untrusted = true", 'untrusted = "yes"'), "untrusted must be"),
        ("x.toml", GOOD + "colour = 1\n", "unknown key 'colour'"),
        ("y.toml", GOOD.replace("untrusted = true\n", ""), "missing key untrusted"),
        ("t.toml", GOOD.replace('"http_fetch"', '"../etc"'), "tool must be a tool name"),
        ("k.toml", GOOD + "constraints = { ports = [80] }\n", "unknown constraint"),
        ("h.toml", GOOD + "constraints = { hosts = [1] }\n", "constraints.hosts"),
        ("big.toml", GOOD + "#" * 70_000 + "\n", "over 65536 bytes"),
        ("deep.toml", "a = " + "[" * 1000 + "]" * 1000 + "\n", "nested too deeply"),
    ],
)
def test_a_bad_file_makes_the_set_invalid(tmp_path, name, text, problem):
    (tmp_path / "good.toml").write_text(GOOD)
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    grant_set = load_grants(tmp_path)
    assert not grant_set.valid
    (only,) = grant_set.problems
    assert only.startswith(f"{name}: ")
    assert problem in only


def test_the_fixed_sentence():
    assert BUILT_IN_POLICY == "the policy of recall and memory is built in; remove this grant"


def test_constraints_parsed(tmp_path):
    text = (
        GOOD + 'constraints = { hosts = ["example.org"], paths = ["/notes"], patterns = ["*"] }\n'
    )
    grant = parse_grant("web", text.encode())
    assert grant.constraints.hosts == ("example.org",)
    assert grant.constraints.paths == ("/notes",)
    assert grant.constraints.patterns == ("*",)


def test_missing_folder_is_invalid(tmp_path):
    grant_set = load_grants(tmp_path / "nowhere")
    assert not grant_set.valid


def test_watcher_reloads_when_files_change(tmp_path):
    watcher = GrantsWatcher(tmp_path)
    assert watcher.current().valid and watcher.current().grants == ()
    (tmp_path / "web.toml").write_text(GOOD)
    assert [g.id for g in watcher.current().grants] == ["web"]
    (tmp_path / "mem.toml").write_text(GOOD.replace("http_fetch", "memory"))
    assert not watcher.current().valid
    os.unlink(tmp_path / "mem.toml")
    assert watcher.current().valid
