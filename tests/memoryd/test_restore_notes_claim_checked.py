"""A restore never lays a notes.md header laxer than the archive's own journal line of its note:
an archive edited by hand (its manifest mended to match) to say trusted, a lower class, or moved
of a note its journal records as an untrusted or higher-class noted note is laid with the
journal's label, recall follows it, and the answer names the note and the edit. A note the
archive's journal holds no line of is laid as its header says."""

import gzip
import hashlib
import io
import json
import os
import re
import tarfile

import pytest

from memoryd.memory import notes
from memoryd.writer import WRITE
from tests.callargs import loose_call
from tests.memoryd.owner_data_harness import Memoryd, _apply_call
from tests.memoryd.store_helpers import TAINTED, Clock

TEXT = "The beta stays open until the release."


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home", clock=Clock())
    yield m
    m.close()


def members(path: str) -> list[tuple[str, bytes]]:
    with tarfile.open(path, "r:gz") as tar:
        return [(i.name, tar.extractfile(i).read()) for i in tar.getmembers()]  # type: ignore[union-attr]


def edited_backup(m: Memoryd, change, name: str = "edited.tar.gz", edits: int = 0) -> str:
    """A backup of m with change applied to each memory file's bytes (change(name, data)), the
    manifest's sizes, hashes and edit count mended to match, as a careful hand would."""
    files = dict(members(m.data("backup")["path"]))
    manifest = json.loads(files.pop("manifest.json"))
    files = {n: change(n, d) for n, d in files.items()}
    for listed in manifest["files"]:
        data = files[listed["path"]]
        listed["size"], listed["sha256"] = len(data), hashlib.sha256(data).hexdigest()
    manifest["counts"]["edits"] += edits
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for n, data in [*files.items(), ("manifest.json", json.dumps(manifest).encode())]:
            info = tarfile.TarInfo(n)
            info.size, info.mode = len(data), 0o600
            tar.addfile(info, io.BytesIO(data))
    (m.home.root / "backups" / name).write_bytes(gzip.compress(buf.getvalue()))
    return name


def header_edit(pattern: str, to: str):
    def change(name: str, data: bytes) -> bytes:
        if name != "memory/notes.md":
            return data
        out = re.sub(pattern, to, data.decode(), count=1, flags=re.M)
        assert out != data.decode(), "the header was not found"
        return out.encode()

    return change


def labels(m: Memoryd, text: str = TEXT) -> list[tuple[str, str, str, bool]]:
    data = m.home.memory_file("notes.md").read_bytes()
    return [(n.kind, n.session, n.klass, n.untrusted) for n in notes.parse(data) if n.text == text]


def edit_of(m: Memoryd, text: str = TEXT) -> str:
    for p in sorted(m.home.edits.glob("*.jsonl")):
        for line in p.open():
            if text in line and '"notes": [{' in line:
                return json.loads(line)["id"]
    raise AssertionError("no journal line")


def restored(m: Memoryd, name: str) -> str:
    return m.data("restore", name=name, replace=True)["message"]


TAINTED_HEAD = rf"^(§ noted \S+ in session {TAINTED['session']} · private) · untrusted$"


def test_a_header_edited_to_trusted_is_laid_untrusted_as_the_archives_journal_says(md):
    md.call({"action": "add", "file": "memory", "text": TEXT}, tainted=True)
    edit = edit_of(md)
    said = restored(md, edited_backup(md, header_edit(TAINTED_HEAD, r"\1")))
    assert (
        f"note 0 ('{TEXT}') laid with its journal's label: its header claims trusted, but the "
        f"archive's journal records edit {edit} of session {TAINTED['session']} as untrusted"
    ) in said, said
    assert labels(md) == [("noted", TAINTED["session"], "private", True)]
    assert "memory-tainted" in md.recall("beta stays open")


def test_a_header_edited_to_moved_and_another_session_is_laid_as_the_untrusted_note(md):
    md.call({"action": "note", "text": TEXT}, tainted=True)
    change = header_edit(
        rf"^§ noted (\S+) in session {TAINTED['session']} · private · untrusted$",
        r"§ moved \1 from memory.md in session mm-clean0001",
    )
    said = restored(md, edited_backup(md, change))
    assert "its header claims trusted, but the archive's journal records edit" in said, said
    assert labels(md) == [("noted", "mm-clean0001", "private", True)]
    assert "memory-tainted" in md.recall("beta stays open")


def test_a_class_lowered_in_the_header_is_laid_as_the_higher_class(md):
    parsed, caller = loose_call(
        json.dumps({"action": "note", "text": TEXT}),
        session="mm-secret01",
        call_id="call-9",
        taint="secret",
        untrusted=False,
    )
    md.service._writer.submit(WRITE, _apply_call, md.service, parsed, caller).result()
    change = header_edit(r"^(§ noted \S+ in session mm-secret01) · secret$", r"\1 · private")
    said = restored(md, edited_backup(md, change))
    assert "its header claims private, but the archive's journal records edit" in said, said
    assert "as secret" in said
    assert labels(md) == [("noted", "mm-secret01", "secret", False)]
    assert TEXT not in md.recall("beta stays open")


def test_of_two_notes_of_one_text_only_the_untrusted_ones_header_is_made_strict(md):
    md.call({"action": "note", "text": TEXT})  # a clean session: trusted
    md.clock.advance(minutes=1)
    md.call({"action": "note", "text": TEXT}, tainted=True)
    said = restored(md, edited_backup(md, header_edit(TAINTED_HEAD, r"\1")))
    assert "note 1 (" in said and "note 0 (" not in said, said
    assert labels(md) == [
        ("noted", "mm-clean0001", "private", False),
        ("noted", TAINTED["session"], "private", True),
    ]


def test_a_moved_entrys_class_lowered_in_its_header_is_laid_as_it_came_in(tmp_path):
    m = Memoryd(tmp_path / "home", clock=Clock(), max_class="secret")
    try:
        parsed, caller = loose_call(
            json.dumps({"action": "add", "file": "memory", "text": TEXT}),
            session="mm-secret01",
            call_id="call-9",
            taint="secret",
            untrusted=False,
        )
        m.service._writer.submit(WRITE, _apply_call, m.service, parsed, caller).result()
        m.call({"action": "remove", "file": "memory", "old": TEXT})
        assert labels(m) == [("dropped", "mm-clean0001", "secret", False)]
        change = header_edit(
            r"^(§ dropped \S+ from memory.md in session mm-clean0001) · secret$", r"\1"
        )
        said = restored(m, edited_backup(m, change))
        assert "its header claims private, but the archive's journal records edit" in said, said
        assert labels(m) == [("dropped", "mm-clean0001", "secret", False)]
    finally:
        m.close()


def test_a_note_the_archives_journal_has_no_line_of_is_laid_as_its_header_says(md):
    md.call({"action": "note", "text": TEXT}, tainted=True)
    untrusted = header_edit(TAINTED_HEAD, r"\1")

    def change(name: str, data: bytes) -> bytes:
        if name.startswith("memory/edits/"):
            return b"".join(x for x in data.splitlines(keepends=True) if TEXT.encode() not in x)
        return untrusted(name, data)

    said = restored(md, edited_backup(md, change, edits=-1))
    assert "laid with its journal's label" not in said, said
    assert labels(md) == [("noted", TAINTED["session"], "private", False)]


def test_an_archive_as_memoryd_wrote_it_is_laid_byte_for_byte(md):
    md.call({"action": "note", "text": TEXT}, tainted=True)
    md.call({"action": "note", "text": "The plumber comes on Tuesday."})
    before = md.home.memory_file("notes.md").read_bytes()
    said = md.data("restore", name=os.path.basename(md.data("backup")["path"]), replace=True)
    assert "laid with its journal's label" not in said["message"]
    assert md.home.memory_file("notes.md").read_bytes() == before
