"""bxctl memory restore says how many of the session logs it laid memoryd indexed, and names
those memoryd left aside (a damaged record), from memoryd's own index state: memoryd answers ok
to session_updated for a log it left aside, so an ok is never said as "indexed"."""

import gzip
import hashlib
import io
import json
import tarfile

import pytest

from bxctl import sessionindex
from tests.bxctl.test_restore_sessions import bx, ok, say
from tests.bxctl.test_restore_sessions import homes as homes  # the fixture

GARBAGE = b"\x07not a record at all \xff\xfe garbage\n"


def damaged_backup(a, tmp_path, damage) -> str:
    """A --with-sessions backup of a whose s-monday log is damage(log) (its manifest computed
    again, as for a log damaged on the old machine before its backup)."""
    say(a, "s-monday", "The zebra crossing on Elm Street is closed until March.")
    say(a, "s-tuesday", "The owner's sister is called Ines.")
    copy = tmp_path / "saved.tar.gz"
    ok(bx(a, "memory", "backup", "--with-sessions", str(copy)))
    with tarfile.open(copy, "r:gz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar}
    members["sessions/s-monday/0.jsonl"] = damage(members["sessions/s-monday/0.jsonl"])
    manifest = json.loads(members.pop("manifest.json"))
    manifest["files"] = [
        {"path": n, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()}
        for n, d in members.items()
    ]
    members["manifest.json"] = json.dumps(manifest).encode()
    out = tmp_path / "damaged.tar.gz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o600
            tar.addfile(info, io.BytesIO(data))
    out.write_bytes(gzip.compress(buf.getvalue()))
    return str(out)


@pytest.mark.parametrize(
    "damage, at",
    [
        (lambda log: GARBAGE, "damaged at record 0"),
        (lambda log: log + GARBAGE, "damaged at record 2"),  # its first two records indexed
    ],
    ids=["wholly", "part way"],
)
def test_a_damaged_log_is_said_left_aside_never_indexed(homes, tmp_path, damage, at):
    a, b = homes
    archive = damaged_backup(a, tmp_path, damage)
    answer = json.loads(ok(bx(b, "memory", "restore", archive, "--json")))
    message = answer["message"]
    assert answer["sessions"]["laid"] == 2
    assert "memoryd indexed them" not in message and "memoryd indexed it" not in message
    assert "bxctl laid 2 session logs into sessions/; memoryd indexed 1 of them" in message
    assert f"1 log left aside: sessions/s-monday/0.jsonl ({at}" in message
    assert "read such a log again" in message or "reads such a log again" in message
    assert str(b.home) not in answer["sessions"]["indexed"]  # memoryd's path of it left out
    assert "Ines" in ok(bx(b, "memory", "search", "sister Ines"))


def test_every_log_indexed_is_said_so(homes, tmp_path):
    a, b = homes
    archive = damaged_backup(a, tmp_path, lambda log: log)
    out = ok(bx(b, "memory", "restore", archive))
    assert "bxctl laid 2 session logs into sessions/ (memoryd indexed them)" in out


STATE = {"left_aside_total": 0, "left_aside": [], "not_indexed_total": 0, "not_indexed": []}


def _state(monkeypatch, **over):
    monkeypatch.setattr(sessionindex, "index_state", lambda home: {**STATE, **over})


def _aside(*sessions: str) -> list[dict]:
    return [{"log": f"sessions/{s}/0.jsonl", "problem": "damaged at record 0: x"} for s in sessions]


def test_a_log_memoryd_does_not_name_past_the_ones_it_names_is_never_said_indexed(monkeypatch):
    # memoryd names the first 10 left aside (sorted) and counts the rest: "s-zz" may be among them
    _state(monkeypatch, left_aside_total=11, left_aside=_aside(*(f"s-{n:02}" for n in range(10))))
    said = sessionindex.indexed(None, ["s-00", "s-05x", "s-zz"], 3)
    assert said.startswith("memoryd indexed 1 of them; 1 log left aside: sessions/s-00/0.jsonl")
    assert "for 1 more log, see bxctl memory stats" in said


def test_a_log_memoryd_could_not_index_yet_is_named(monkeypatch):
    waiting = [{"log": "sessions/s-b/0.jsonl", "problem": "Permission denied"}]
    _state(monkeypatch, not_indexed_total=1, not_indexed=waiting)
    said = sessionindex.indexed(None, ["s-a", "s-b"], 2)
    assert said == (
        "memoryd indexed 1 of them; 1 log not indexed yet: sessions/s-b/0.jsonl (Permission denied)"
    )


def test_no_index_state_says_nothing_was_indexed(monkeypatch):
    monkeypatch.setattr(sessionindex, "index_state", lambda home: None)
    assert sessionindex.indexed(None, ["s-a"], 1) == (
        "memoryd was told of it, but did not answer for its index: bxctl memory stats says "
        "whether it was indexed"
    )
    _state(monkeypatch, gone="removed")
    assert sessionindex.indexed(None, ["s-a"], 1).startswith("memoryd indexed none of them")


def test_a_log_holding_bytes_the_index_has_not_read_is_not_said_indexed(monkeypatch):
    _state(monkeypatch, unread_total=1, unread=["s-b"])
    said = sessionindex.indexed(None, ["s-a", "s-b"], 2)
    assert (
        said
        == "memoryd indexed 1 of them; 1 log not indexed yet: sessions/s-b/0.jsonl (not read yet)"
    )
