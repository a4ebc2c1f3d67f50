"""bxctl memory restore lays the archive's session logs the home lacks, and memoryd indexes them.

memoryd never writes sessions/ (loopd's); bxctl, on the host as the owner, reads the archive again
and lays each sessions/<ID>/0.jsonl that matches its manifest, never over a log that is there.
"""

import gzip
import hashlib
import io
import json
import os
import stat
import tarfile

import pytest
from typer.testing import CliRunner

from bxctl import sessionarchive, sessionlay, sessionrestore
from bxctl.cli import app
from proto.client import request
from proto.messages import MemoryAdmin, SessionUpdated
from proto.records import AssistantRecord, UserRecord, append_session_record
from tests.memoryd_process import MemorydProcess

runner = CliRunner()
T = "2026-12-01T15:33:35Z"
SAID = "The zebra crossing on Elm Street is closed until March."


@pytest.fixture
def homes(tmp_path):
    """Two memoryds, each on its own home: a (where things were said) and b (a new machine)."""
    made = []
    try:
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
            made.append(MemorydProcess(tmp_path / name))
            made[-1].start()
        yield made
    finally:
        for proc in made:
            proc.stop()


def bx(memoryd, *argv):
    return runner.invoke(app, list(argv), env={"BOXMAKER_HOME": str(memoryd.home)})


def ok(result) -> str:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout


def say(memoryd, session: str, *texts: str) -> None:
    """Records appended to a session's log, as loopd writes them, and memoryd told of them."""
    folder = memoryd.home / "sessions" / session
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    for text in texts:
        append_session_record(folder / "0.jsonl", UserRecord(time=T, content=text))
        append_session_record(folder / "0.jsonl", AssistantRecord(time=T, content="Noted."))
    request(memoryd.loop_socket, SessionUpdated(session=session))


def tree(root) -> dict[str, bytes | None]:
    """Every path under root, with a file's bytes."""
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, root)] = (
                open(path, "rb").read() if name in files and os.path.isfile(path) else None
            )
    return found


def backed_up(a, tmp_path) -> str:
    say(a, "s-monday", SAID)
    say(a, "s-tuesday", "The owner's sister is called Ines.")
    copy = tmp_path / "saved.tar.gz"
    ok(bx(a, "memory", "backup", "--with-sessions", str(copy)))
    return str(copy)


def test_a_restore_into_a_new_home_brings_back_what_was_said(homes, tmp_path):
    a, b = homes
    copy = backed_up(a, tmp_path)
    # (no search before: the owner's search is a line of the recall log, which a plain restore
    # would replace, so it refuses a home holding one)
    assert not (b.home / "sessions" / "s-monday").exists()
    out = ok(bx(b, "memory", "restore", copy))
    assert "the archive holds 2 session logs" in out
    assert "bxctl laid 2 session logs into sessions/ (memoryd indexed them)" in out
    assert "not laid" not in out
    for session in ("s-monday", "s-tuesday"):
        laid = b.home / "sessions" / session / "0.jsonl"
        assert laid.read_bytes() == (a.home / "sessions" / session / "0.jsonl").read_bytes()
        assert stat.S_IMODE(laid.stat().st_mode) == 0o600
        assert stat.S_IMODE(laid.parent.stat().st_mode) == 0o700
        assert [p.name for p in laid.parent.iterdir()] == ["0.jsonl"]  # no temporary file left
    assert stat.S_IMODE((b.home / "sessions").stat().st_mode) == 0o700
    assert SAID in ok(bx(b, "memory", "search", "zebra crossing"))


def test_a_log_the_home_has_is_kept_as_it_is(homes, tmp_path):
    a, b = homes
    copy = backed_up(a, tmp_path)
    say(b, "s-monday", "Something else was said here.")
    held = (b.home / "sessions/s-monday/0.jsonl").read_bytes()
    answer = json.loads(ok(bx(b, "memory", "restore", copy, "--json")))
    assert answer["sessions"] | {"indexed": ""} == {
        "laid": 1,
        "kept": 1,
        "forgotten": 0,
        "refused": 0,
        "refusals": [],
        "problem": None,
        "indexed": "",
    }
    assert answer["sessions"]["indexed"] == "memoryd indexed it"
    assert "1 already there kept as it is" in answer["message"]
    assert (b.home / "sessions/s-monday/0.jsonl").read_bytes() == held
    assert SAID not in ok(bx(b, "memory", "search", "zebra crossing"))
    assert "Ines" in ok(bx(b, "memory", "search", "sister Ines"))


def test_a_record_forgotten_before_the_backup_stays_out_of_the_index(homes, tmp_path):
    a, b = homes
    say(a, "s-monday", SAID)
    ok(bx(a, "memory", "forget", "session:s-monday:0", "--yes"))
    copy = tmp_path / "saved.tar.gz"
    ok(bx(a, "memory", "backup", "--with-sessions", str(copy)))
    ok(bx(b, "memory", "restore", str(copy)))
    assert (b.home / "sessions/s-monday/0.jsonl").read_bytes().count(SAID.encode()) == 1
    assert SAID not in ok(bx(b, "memory", "search", "zebra crossing"))


def test_memoryd_not_answering_on_its_loopd_socket_indexes_them_at_its_next_start(homes, tmp_path):
    a, b = homes
    copy = backed_up(a, tmp_path)
    b.stop()
    reply = {"session_logs": 2, "message": "restored"}
    assert sessionrestore.after_restore(reply, copy, b.home, None) == []
    assert reply["sessions"]["laid"] == 2
    assert "memoryd indexes them at its next start" in reply["message"]
    b.start()
    assert SAID in ok(bx(b, "memory", "search", "zebra crossing"))


def test_memoryds_restore_says_how_many_logs_the_archive_holds_and_nothing_of_laying(
    homes, tmp_path
):
    a, b = homes
    copy = backed_up(a, tmp_path)
    name = "saved.tar.gz"
    os.link(copy, b.home / "backups" / name)
    text = request(
        b.admin_socket, MemoryAdmin(command="restore", arg=json.dumps({"name": name}))
    ).text
    message = json.loads(text)["message"]
    assert message.endswith("; the archive holds 2 session logs"), message
    assert not (b.home / "sessions/s-monday").exists()


# --- archives bxctl reads member by member (made here: memoryd would refuse each whole) ------


def archive(path, members, listed=None) -> None:
    """A gzip'd tar of members ((name, bytes, type)) and a manifest listing listed (default: each
    member with its own size and sha256)."""
    if listed is None:
        listed = [(name, data) for name, data, _ in members]
    files = [
        {"path": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        for name, data in listed
    ]
    manifest = {"format": sessionarchive.FORMAT, "version": 1, "files": files, "counts": {}}
    with gzip.open(path, "wb") as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for name, data, kind in [*members, ("manifest.json", json.dumps(manifest).encode(), None)]:
            info = tarfile.TarInfo(name)
            info.size = len(data) if kind is None else 0
            if kind is not None:
                info.type, info.linkname = kind, "/etc/passwd"
            tar.addfile(info, io.BytesIO(data) if kind is None else None)


GOOD = ("sessions/s-good/0.jsonl", b'{"type":"user"}\n', None)


@pytest.mark.parametrize(
    ("member", "listed", "why"),
    [
        (
            ("sessions/s-bad/0.jsonl", b"other\n", None),
            [("sessions/s-bad/0.jsonl", b"mine\n")],
            "does not match its size and sha256 in the manifest",
        ),
        (("sessions/../x/0.jsonl", b"x\n", None), None, "not a session log's name"),
        (("sessions/a b/0.jsonl", b"x\n", None), None, "not a session log's name"),
        (("sessions/s-x/1.jsonl", b"x\n", None), None, "not a session log's name"),
        (("sessions/s-x/0.jsonl\n", b"x\n", None), None, "not a session log's name"),
        (("sessions/s-link/0.jsonl", b"", tarfile.SYMTYPE), None, "not a plain file"),
        (("sessions/s-hard/0.jsonl", b"", tarfile.LNKTYPE), None, "not a plain file"),
        (("sessions/s-new/0.jsonl", b"x\n", None), [], "not listed in the manifest"),
    ],
    ids=["sha256", "climbs", "space", "not-0", "newline", "symlink", "hard-link", "unlisted"],
)
def test_a_member_that_is_not_a_listed_session_log_is_refused_alone(tmp_path, member, listed, why):
    home = tmp_path / "home"
    (home / "sessions").mkdir(mode=0o700, parents=True)
    before = tree(tmp_path)
    path = tmp_path / "made.tar.gz"
    archive(path, [member, GOOD], None if listed is None else [*listed, GOOD[:2]])
    done = sessionlay.lay(path, home)
    assert done.laid == ["s-good"] and done.kept == 0 and done.problem is None
    [line] = done.refused
    assert why in line and "\n" not in line
    after = tree(tmp_path)
    assert {k for k in after if k not in before} == {
        "made.tar.gz",
        "home/sessions/s-good",
        "home/sessions/s-good/0.jsonl",
    }
    assert after["home/sessions/s-good/0.jsonl"] == GOOD[1]


def test_a_session_folder_that_is_a_link_is_not_followed(tmp_path):
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    (home / "sessions").mkdir(mode=0o700, parents=True)
    elsewhere.mkdir()
    (home / "sessions" / "s-good").symlink_to(elsewhere)
    path = tmp_path / "made.tar.gz"
    archive(path, [GOOD])
    done = sessionlay.lay(path, home)
    assert (done.laid, done.kept, done.refused) == ([], 1, [])
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda data: data[: len(data) // 2], "truncated or damaged"),
        (lambda data: data[:-8], "truncated or damaged"),  # whole but for the gzip trailer
        (lambda data: b"not gzip at all", "truncated or damaged"),
        (lambda data: gzip.compress(b"\0" * 10240), "no manifest"),
    ],
)
def test_an_archive_that_cannot_be_read_lays_nothing(tmp_path, damage, why):
    home = tmp_path / "home"
    (home / "sessions").mkdir(mode=0o700, parents=True)
    path = tmp_path / "made.tar.gz"
    archive(path, [GOOD])
    path.write_bytes(damage(path.read_bytes()))
    done = sessionlay.lay(path, home)
    assert why in done.problem and done.laid == [] and done.refused == []
    assert list((home / "sessions").iterdir()) == []


def test_the_answer_names_each_refusal_in_one_line_and_counts_the_rest(tmp_path):
    home = tmp_path / "home"
    (home / "sessions").mkdir(mode=0o700, parents=True)
    path = tmp_path / "made.tar.gz"
    bad = [(f"sessions/x {n}/0.jsonl", b"x\n", None) for n in range(sessionlay.SHOWN + 5)]
    archive(path, [*bad, GOOD])
    reply = {"session_logs": len(bad) + 1, "message": "restored", "counts": {}}
    lines = sessionrestore.after_restore(reply, path, home, None)
    assert len(lines) == sessionlay.SHOWN + 1 and lines[-1] == "and 5 more refused"
    assert (
        lines[0] == "refused 'sessions/x 0/0.jsonl': not a session log's name (sessions/ID/0.jsonl)"
    )
    assert reply["sessions"]["refused"] == len(bad)
    assert len(reply["sessions"]["refusals"]) == sessionlay.SHOWN
    assert "bxctl laid 1 session log into sessions/" in reply["message"]
    assert f"{len(bad)} refused" in reply["message"]


def test_an_archive_other_than_the_one_memoryd_restored_lays_nothing(tmp_path):
    home = tmp_path / "home"
    (home / "sessions").mkdir(mode=0o700, parents=True)
    path = tmp_path / "made.tar.gz"
    archive(path, [GOOD])
    reply = {"session_logs": 1, "message": "restored", "counts": {"entries": 3}}
    sessionrestore.after_restore(reply, path, home, None)
    assert "not the one memoryd restored" in reply["sessions"]["problem"]
    assert list((home / "sessions").iterdir()) == []


def test_the_bounds_are_memoryds():
    from memoryd.data import archive as memoryds

    assert (sessionarchive.FORMAT, sessionarchive.VERSION, sessionarchive.MANIFEST) == (
        memoryds.FORMAT,
        memoryds.VERSION,
        memoryds.MANIFEST,
    )
    assert (sessionarchive.MANIFEST_MAX, sessionarchive.RATIO, sessionarchive.FLOOR) == (
        memoryds.MANIFEST_MAX,
        memoryds.RATIO,
        memoryds.FLOOR,
    )
    assert sessionarchive.SESSION_MEMBERS_MAX == memoryds.SESSION_MEMBERS_MAX
    assert sessionarchive.OTHER_MEMBERS_MAX == memoryds.MEMORY_MEMBERS_MAX + 1


def test_a_socket_given_elsewhere_than_the_home_lays_nothing_there(tmp_path):
    """bxctl lays into the home whose owner socket memoryd answered on, or nowhere."""
    home = tmp_path / "home"
    (home / "sessions").mkdir(mode=0o700, parents=True)
    path = tmp_path / "made.tar.gz"
    archive(path, [GOOD])
    reply = {"session_logs": 1, "message": "restored", "counts": {}}
    assert sessionrestore.after_restore(reply, path, home, tmp_path / "other.sock") == []
    assert "set BOXMAKER_HOME to memoryd's home" in reply["sessions"]["problem"]
    assert "bxctl laid none of them into sessions/" in reply["message"]
    assert list((home / "sessions").iterdir()) == []
