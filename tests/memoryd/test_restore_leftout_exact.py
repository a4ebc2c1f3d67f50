"""What a restore leaves out is exactly what the home forgot after the archive was made: a text
forgotten, written again, backed up and forgotten again within one minute is two forgets (the
second is left out of that backup's restore), and the answer counts only texts actually taken out
of the staged files, never a field of a journal or recall-log line that happens to be equal to a
forgotten text."""

import shutil

import pytest

from memoryd.data import layout
from memoryd.journal import forgetread, forgotten, forgottenwrite
from tests.memoryd.owner_data_harness import Memoryd

SECRET = "Bank card PIN is 4321."
ELSEWHERE = "held only in the journal, the recall log or pending writes"


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def _backup(m: Memoryd, name: str) -> str:
    shutil.copy(m.data("backup")["path"], m.home.root / "backups" / name)
    return name


def test_a_text_forgotten_again_in_the_same_minute_is_left_out(md):
    md.call({"action": "add", "file": "memory", "text": "Kept."})
    md.call({"action": "add", "file": "memory", "text": SECRET})
    md.data("forget", id=SECRET)
    md.clock.advance(seconds=20)
    md.call({"action": "add", "file": "memory", "text": SECRET})  # written again
    md.clock.advance(seconds=10)
    archive = _backup(md, "mid.tar.gz")
    md.clock.advance(seconds=10)  # the same minute still
    md.data("forget", id=SECRET)
    listed = [f for f in forgotten.held_texts(md.home) if f.digest == forgotten.digest(SECRET)]
    assert len(listed) == 2 and len({f.time for f in listed}) == 1  # one line per forget
    out = md.data("restore", name=archive, replace=True)
    assert "1 entry the owner made memoryd forget after this backup was made" in out["message"]
    assert SECRET not in md.admin("block", {"json": True})
    assert SECRET.encode() not in b"".join(p.read_bytes() for _, p in layout.memory_files(md.home))


@pytest.mark.parametrize("query", ["memory.md", "add", "owner"])
def test_a_forgotten_text_equal_to_a_field_is_not_said_left_out(md, query):
    md.call({"action": "add", "file": "memory", "text": "Kept."})
    archive = _backup(md, "a.tar.gz")
    md.clock.advance(minutes=1)
    md.recall(query)
    md.data("forget", id=query)
    md.clock.advance(minutes=1)
    out = md.data("restore", name=archive, replace=True)
    assert "left out" not in out["message"]
    assert "Kept." in md.admin("block", {"json": True})


def test_a_forgotten_query_the_archive_holds_is_said_left_out(md):
    md.call({"action": "add", "file": "memory", "text": "Kept."})
    md.recall(SECRET)
    archive = _backup(md, "a.tar.gz")
    md.clock.advance(minutes=1)
    md.data("forget", id=SECRET)
    md.clock.advance(minutes=1)
    out = md.data("restore", name=archive, replace=True)
    assert f"1 text {ELSEWHERE} the owner made memoryd forget" in out["message"]
    assert SECRET.encode() not in b"".join(p.read_bytes() for _, p in layout.memory_files(md.home))


def test_a_damaged_line_after_a_restore_forgets_nothing_back(md):
    """The home's forget lines go with its journal: the restore's journal names what it carried
    over into forgotten.jsonl, each digest as the forget it was, for the file to fall back on."""
    md.call({"action": "add", "file": "memory", "text": "Kept."})
    early = _backup(md, "early.tar.gz")  # before the text was written
    md.clock.advance(minutes=1)
    md.call({"action": "add", "file": "memory", "text": SECRET})
    holding = _backup(md, "holding.tar.gz")
    md.clock.advance(minutes=1)
    md.data("forget", id=SECRET)
    forgot = {f for f in forgotten.held_texts(md.home) if f.digest == forgotten.digest(SECRET)}
    md.clock.advance(minutes=1)
    md.data("restore", name=early, replace=True)  # nothing of it to leave out
    assert forgot <= forgetread.forgets(md.home).texts
    # The digest's line damaged (its hex cut short), as a bad block or a slip by hand leaves it.
    path = forgotten.path(md.home)
    digest = forgotten.digest(SECRET)
    path.write_text(path.read_text().replace(digest, digest[:40]))
    md.clock.advance(minutes=1)
    out = md.data("restore", name=holding, replace=True)
    assert "1 entry the owner made memoryd forget after this backup was made" in out["message"]
    assert SECRET not in md.admin("block", {"json": True})


def _lacks_said(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "memoryd.journal.forgottensaid" and "lacks" in r.getMessage()
    ]


def test_a_restore_lists_in_forgotten_jsonl_every_digest_its_own_lines_name(md, caplog):
    """The leave-out's journal line names each digest as a forget of its own: forgotten.jsonl
    lists it so too, so neither the restore nor the next start takes the file for one that lost
    lines; a line of it removed afterwards is still said."""
    md.call({"action": "note", "text": "Zebra quartz note alpha."})
    md.call({"action": "note", "text": SECRET})
    archive = _backup(md, "before.tar.gz")
    md.clock.advance(minutes=1)
    md.data("forget", id=SECRET)
    md.clock.advance(minutes=1)
    caplog.set_level("INFO")
    out = md.data("restore", name=archive, replace=True)
    assert "1 note the owner made memoryd forget after this backup was made" in out["message"]
    md.recall("Zebra")
    forgottenwrite.mend(md.home)  # as the next start does
    assert _lacks_said(caplog) == []
    named = forgetread.forgets(md.home).texts
    assert named and named <= forgotten.held_texts(md.home)
    where = forgotten.path(md.home)
    lines = where.read_bytes().splitlines(keepends=True)
    where.write_bytes(b"".join(line for line in lines if b'"digest"' not in line))
    forgottenwrite.mend(md.home)
    assert len(_lacks_said(caplog)) == 1 and "lacks 2 keys or digests" in _lacks_said(caplog)[0]
