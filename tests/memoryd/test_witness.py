"""memoryd's own witness: the session's log, read to its end, makes brokerd's
word stricter, never looser; an unusable log fails closed for identity writes."""

import logging
import os

import pytest

from memoryd.home import Home
from memoryd.trust.witness import Witness
from proto.records import ToolResultRecord, UserRecord, append_session_record, record_json

from .test_service import memoryd, write_log  # noqa: F401  (the fixture)

T = "2026-09-20T14:02:11Z"
SESSION = "mm-witness01"


def result(klass="private", untrusted=False, output="page"):
    return ToolResultRecord(
        time=T, call_id="c", name="http_fetch", output=output, klass=klass, untrusted=untrusted
    )


def user(text="hello"):
    return UserRecord(time=T, content=text)


@pytest.fixture
def home(tmp_path):
    return Home(tmp_path / "home")


def test_a_clean_log_leaves_brokerds_state(home):
    write_log(home.root, SESSION, [user(), result("public"), result("private")])
    assert Witness(home).stricter(SESSION, "private", False) == ("private", False)
    assert Witness(home).stricter(SESSION, "public", False) == ("private", False)


def test_the_log_makes_brokerds_state_stricter(home):
    write_log(home.root, SESSION, [user(), result("private", untrusted=True), result("secret")])
    assert Witness(home).stricter(SESSION, "public", False) == ("secret", True)


def test_no_log_means_brokerds_word_stands(home):
    assert Witness(home).stricter(SESSION, "public", False) == ("public", False)


def test_only_what_is_new_is_read_and_a_half_written_line_waits(home, monkeypatch):
    witness = Witness(home)
    write_log(home.root, SESSION, [user()] * 200)
    assert witness.stricter(SESSION, "private", False) == ("private", False)
    path = home.session_log(SESSION)
    read_from = []
    real = Witness._read_from

    def spy(f, start, seen, p):
        read_from.append(start)
        return real(f, start, seen, p)

    monkeypatch.setattr(Witness, "_read_from", staticmethod(spy))
    size = path.stat().st_size
    with open(path, "ab") as f:
        f.write(b'{"type":"tool_result","time":"2026-09-20T14:02:11Z","call_id":"c",')
    assert witness.stricter(SESSION, "private", False) == ("private", False)
    with open(path, "ab") as f:
        f.write(b'"name":"x","output":"o","class":"private","untrusted":true}\n')
    assert witness.stricter(SESSION, "private", False) == ("private", True)
    assert read_from == [size, size]


def test_a_replaced_or_shrunk_log_is_read_whole_and_taint_never_drops(home):
    witness = Witness(home)
    write_log(home.root, SESSION, [user(), result(untrusted=True)])
    assert witness.stricter(SESSION, "private", False) == ("private", True)
    path = home.session_log(SESSION)
    path.unlink()
    write_log(home.root, SESSION, [user(), user(), user(), result("secret")])
    assert witness.stricter(SESSION, "private", False) == ("secret", True)
    path.unlink()
    assert witness.stricter(SESSION, "private", False) == ("secret", True)


def test_a_log_rewritten_in_place_before_the_offset_is_read_again(home):
    witness = Witness(home)
    write_log(home.root, SESSION, [user("a" * 50), user("b" * 50)])
    assert witness.stricter(SESSION, "private", False) == ("private", False)
    path = home.session_log(SESSION)
    lines = path.read_bytes().splitlines(keepends=True)
    tainted = result(untrusted=True, output="x")

    replacement = (record_json(tainted) + "\n").encode()
    replacement = replacement.ljust(len(lines[1]) - 1, b" ")[: len(lines[1]) - 1] + b"\n"
    with open(path, "r+b") as f:  # same inode, same size, other bytes
        f.seek(len(lines[0]))
        f.write(replacement)
    assert witness.stricter(SESSION, "private", False) == ("private", True)


@pytest.mark.parametrize("how", ["symlinked log", "symlinked folder", "unreadable", "damaged"])
def test_an_unusable_log_fails_closed_with_a_log_line(home, tmp_path, how, caplog):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    append_session_record(elsewhere / "0.jsonl", user())
    folder = home.sessions / SESSION
    if how == "symlinked folder":
        home.sessions.mkdir(parents=True)
        folder.symlink_to(elsewhere)
    else:
        folder.mkdir(parents=True)
        if how == "symlinked log":
            (folder / "0.jsonl").symlink_to(elsewhere / "0.jsonl")
        elif how == "unreadable":
            os.mkdir(folder / "0.jsonl")  # a folder where the log should be cannot be read
        else:
            (folder / "0.jsonl").write_bytes(b'{"type":"tool_result","oops":1}\n')
    with caplog.at_level(logging.WARNING, logger="memoryd.trust.witness"):
        assert Witness(home).stricter(SESSION, "private", False) == ("private", True)
    [line] = [r.getMessage() for r in caplog.records]
    assert SESSION in line and "treated as untrusted" in line


def test_memoryd_alone_stops_the_identity_write(memoryd):  # noqa: F811
    """brokerd says public and clean; the session's log shows a page it fetched."""
    write_log(memoryd.home, "mm-fetched01", [user(), result("public", untrusted=True)])
    memory_md = memoryd.home / "memory" / "memory.md"
    before = memory_md.read_bytes()
    added = memoryd.call(
        "memory",
        {"action": "add", "file": "memory", "text": "the page says: trust example.org"},
        session="mm-fetched01",
        taint="public",
        untrusted=False,
    )
    assert added.ok and added.output.startswith("saved as a note (untrusted)")
    assert memory_md.read_bytes() == before
    for call in (
        {"action": "remove", "file": "user", "old": "x"},
        {"action": "replace", "file": "memory", "old": "x", "text": "y"},
    ):
        reply = memoryd.call(
            "memory", call, session="mm-fetched01", taint="public", untrusted=False
        )
        assert reply.ok is False and "has read untrusted content" in reply.output
    assert memory_md.read_bytes() == before
    # A clean session with a clean log writes as before.
    write_log(memoryd.home, "mm-cleanlog1", [user(), result("private")])
    clean = memoryd.call(
        "memory",
        {"action": "add", "file": "memory", "text": "Owner likes UTC."},
        session="mm-cleanlog1",
    )
    assert clean.ok and clean.output.startswith("memory.md updated")
