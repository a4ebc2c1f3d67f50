"""A session's label never gets laxer inside memoryd: once brokerd reported a session untrusted
(or secret), a later memory call for it reported laxer (brokerd restarted and lost it, no log to
read) is taken at what memoryd recorded, labels.jsonl's or the journal's, as the import path
takes it; brokerd's stricter word is recorded in labels.jsonl, and its laxer word said once."""

import json
import logging

from memoryd.home import Home
from memoryd.trust import risen
from memoryd.trust.witness import Witness

from .test_service import memoryd  # noqa: F401  (the fixture)

SESSION = "sx-monotone"


def labels(home: Home) -> list[dict]:
    path = home.memory_file("labels.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def add(memoryd, text, untrusted, taint="private", call_id="c1"):  # noqa: F811
    args = {"action": "add", "file": "memory", "text": text}
    return memoryd.call(
        "memory", args, session=SESSION, taint=taint, untrusted=untrusted, call_id=call_id
    )


def test_a_laxer_word_after_an_untrusted_one_writes_a_note(memoryd, caplog):  # noqa: F811
    home = Home(memoryd.home)
    caplog.set_level(logging.INFO)
    assert "note" in add(memoryd, "Wish one qzaa.", untrusted=True).output
    assert labels(home) == [{"session": SESSION, "class": "private", "untrusted": True}]
    for n in range(2):
        answer = add(memoryd, f"Later fact qzbb{n}.", untrusted=False, call_id=f"c{n + 2}")
        assert answer.ok and "untrusted" in answer.output
    assert "qzbb" not in home.memory_file("memory.md").read_text()
    said = [r.getMessage() for r in caplog.records if "laxer than memoryd recorded" in r.message]
    assert len(said) == 1 and SESSION in said[0]  # once, naming the session
    assert len(labels(home)) == 1  # nothing stricter to record


def test_the_journal_alone_is_a_floor(memoryd):  # noqa: F811
    home = Home(memoryd.home)
    add(memoryd, "Wish one qzaa.", untrusted=True, taint="secret")
    home.memory_file("labels.jsonl").unlink()  # as an older memoryd left the home
    answer = add(memoryd, "Later fact qzcc.", untrusted=False, call_id="c2")
    assert answer.ok and "saved as a note (secret)" in answer.output
    assert "qzcc" not in home.memory_file("memory.md").read_text()


def test_brokerds_stricter_word_is_recorded_and_stays(tmp_path):
    home = Home(tmp_path / "home")
    home.memory.mkdir(parents=True)
    assert Witness(home).stricter(SESSION, "private", False) == ("private", False)
    assert labels(home) == []  # a clean word is no rise
    assert Witness(home).stricter(SESSION, "secret", False) == ("secret", False)
    assert Witness(home).stricter(SESSION, "private", True) == ("secret", True)
    assert Witness(home).stricter(SESSION, "public", False) == ("secret", True)
    assert len(labels(home)) == 2  # secret, then untrusted: each rise one line
    assert risen.label(home, SESSION) == ("secret", True)
    assert Witness(home).stricter("another1", "private", False) == ("private", False)


def test_a_public_session_stays_public_and_a_laxer_word_is_said_once(tmp_path, caplog):
    home = Home(tmp_path / "home")
    home.memory.mkdir(parents=True)
    witness = Witness(home)
    with caplog.at_level(logging.INFO, logger="memoryd"):
        assert witness.stricter(SESSION, "public", True) == ("public", True)
        assert witness.stricter(SESSION, "public", True) == ("public", True)
        assert not [r for r in caplog.records if "laxer" in r.message]
        for _ in range(3):
            assert witness.stricter(SESSION, "public", False) == ("public", True)
    said = [r.getMessage() for r in caplog.records if "laxer than memoryd recorded" in r.message]
    assert said == [
        f"session {SESSION}: brokerd reports it public, trusted, laxer than memoryd recorded it"
        " (public, untrusted in memory/labels.jsonl or the journal), and its log shows nothing"
        " stricter; its memory calls are taken at public, untrusted"
    ]
