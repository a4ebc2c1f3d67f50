"""forget names the archives in backups/ that may still hold the text, and only those: an archive
made before the text was written is not named (the owner would delete a good backup for nothing),
one made after is, whatever form the text takes there (raw in a memory file, escaped in the
journal, a tool call's name and arguments in a session log), and one that cannot be read through
is named too, as nothing tells that it does not hold it."""

import gzip
import io
import json
import os
import shutil
import tarfile

import pytest

from memoryd.data import archiveheld, layout
from memoryd.writer import WRITE
from proto.messages import ToolCall
from proto.records import AssistantRecord, append_session_record
from tests.memoryd.owner_data_harness import Memoryd, T, owner_searched

OLD = "Kettle descaled on Sunday."
NEW = 'Zucchini "fact" \u00fcber caf\u00e9 \u2014 written after the backup.'
SAID = "may still hold it"


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def _backup(m: Memoryd, **arg) -> str:
    return os.path.basename(m.data("backup", **arg)["path"])


def _forget(m: Memoryd, ref: str) -> str:
    owner_searched(m.index)
    return m.data("forget", id=ref)["message"]


def test_an_archive_made_before_the_text_was_written_is_not_named(md):
    md.call({"action": "note", "text": OLD})
    _backup(md)
    md.call({"action": "note", "text": NEW})
    said = _forget(md, "note:1")
    assert SAID not in said and "Older backups" not in said, said


def test_an_archive_made_after_it_is_named_and_the_older_one_is_not(md):
    md.call({"action": "note", "text": OLD})
    before = _backup(md)
    md.call({"action": "add", "file": "user", "text": NEW})
    after = _backup(md)
    said = _forget(md, "user.md:1")
    assert f"1 backup in {layout.backups(md.home)} {SAID} ({after})" in said, said
    assert before not in said


def test_the_escaped_copy_in_the_journal_alone_is_found(md):
    """The entry is gone from user.md before the backup: only the journal's JSON lines (its
    non-ASCII and quotes escaped) hold it in the archive."""
    md.call({"action": "add", "file": "user", "text": NEW})
    md.call({"action": "remove", "file": "user", "old": NEW})
    assert NEW not in md.home.memory_file("user.md").read_text()
    made = _backup(md)
    with tarfile.open(layout.backups(md.home) / made, "r:gz") as tar:
        journal = b"".join(
            tar.extractfile(m).read() for m in tar.getmembers() if "/edits/" in m.name
        )
    assert NEW.encode() not in journal  # escaped there, never raw
    assert archiveheld.holding(md.home, [NEW]) == [made]
    assert archiveheld.holding(md.home, [OLD]) == []


def _tool_call(m: Memoryd, session: str, arguments: str) -> None:
    log = m.home.session_log(session)
    log.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    call = ToolCall(id="call_1", name="read_file", arguments=arguments)
    append_session_record(log, AssistantRecord(time=T, tool_calls=[call]))
    m.service._writer.submit(WRITE, m.index.catch_up_session, session).result()


def test_a_session_record_held_apart_in_an_archived_log_is_named(md):
    """A tool call's row is "name arguments"; the archived log holds the name and the arguments
    (escaped JSON in a JSON string) apart."""
    md.call({"action": "note", "text": OLD})
    before = _backup(md, with_sessions=True)
    _tool_call(md, "s-two", json.dumps({"path": '/srv/\u00fcber "q".txt'}))
    after = _backup(md, with_sessions=True)
    said = _forget(md, "session:s-two:0")
    assert f"{SAID} ({after})" in said and before not in said, said


def test_an_archive_that_cannot_be_read_through_is_named_one_without_the_text_is_not(md):
    md.call({"action": "add", "file": "user", "text": NEW})
    folder = layout.backups(md.home)
    folder.mkdir(mode=0o700, exist_ok=True)
    whole = io.BytesIO()
    with gzip.GzipFile(fileobj=whole, mode="wb") as gz:
        with tarfile.open(fileobj=gz, mode="w") as tar:
            data = b"nothing of it here\n"
            info = tarfile.TarInfo("notes.txt")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    (folder / "owners.tar.gz").write_bytes(whole.getvalue())
    (folder / "cut.tar.gz").write_bytes(whole.getvalue()[:20])
    said = _forget(md, "user.md:1")
    assert f"1 backup in {folder} {SAID} (cut.tar.gz)" in said, said


def test_no_archive_no_sentence(tmp_path):
    m = Memoryd(tmp_path / "home")
    try:
        m.call({"action": "note", "text": NEW})
        shutil.rmtree(layout.backups(m.home), ignore_errors=True)
        assert SAID not in _forget(m, "note:0")
    finally:
        m.close()


def _archive_of(m: Memoryd, name: str, log: bytes) -> None:
    folder = layout.backups(m.home)
    folder.mkdir(mode=0o700, exist_ok=True)
    with gzip.open(folder / name, "wb") as gz:
        with tarfile.open(fileobj=gz, mode="w") as tar:
            info = tarfile.TarInfo("sessions/s/0.jsonl")
            info.size = len(log)
            tar.addfile(info, io.BytesIO(log))


def _line(content: str) -> bytes:
    return json.dumps({"type": "user", "time": "x", "content": content}).encode() + b"\n"


@pytest.mark.parametrize(
    ("text", "log", "held"),
    [
        ("garden", _line("about the garden") * 50, False),  # a word of longer texts
        ("garden", _line("about the garden") * 50 + _line(" \u3000garden\n"), True),
        ("caf\u00e9 open", b'{"content":"caf\\u00e9 open"}\n', True),  # another escaping
        ("caf\u00e9 open", b'{"content":"torn caf\xc3\xa9 open', True),  # a line cut short
        ("caf\u00e9 open", _line("the caf\u00e9 open late"), False),
    ],
)
def test_a_session_log_holds_the_text_only_as_a_whole_value(md, text, log, held):
    _archive_of(md, "a.tar.gz", log)
    assert archiveheld.holding(md.home, [text]) == (["a.tar.gz"] if held else [])


def test_a_memory_file_holds_the_text_as_memoryd_reads_it(md):
    """notes.md stuffs a note's line that starts as a header does: its bytes are not the text.
    An entry that merely contains the text is not it."""
    stuffed = "Recipe card\n\u00a7 noted is how it starts"
    md.call({"action": "note", "text": stuffed})
    md.call({"action": "add", "file": "user", "text": "Read a book on Sunday."})
    made = _backup(md)
    notes = md.home.memory_file("notes.md").read_bytes()
    assert stuffed.encode() not in notes  # so no byte search finds it
    assert archiveheld.holding(md.home, [stuffed]) == [made]
    assert archiveheld.holding(md.home, ["a book"]) == []
