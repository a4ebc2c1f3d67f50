"""forget: after it, no file memoryd writes under {home} holds the text, and no recall, search,
show, block, stats or export returns it; the keys stay out of every later index; undo refuses."""

import json
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.errors import AdminRefused
from memoryd.journal import forgotten, forgottenmarker
from tests.memoryd.owner_data_harness import Memoryd

WORDS = ["launch", "router", "codename", "window", "tea", "thursday", "march", "owner"]


def fact(i: int, words: tuple[str, str]) -> str:
    return f"The {words[0]} {words[1]} is qz{i}x{i}qz."


def written_files(m: Memoryd):
    """Every file memoryd writes under {home}: memory/ and index/ (backups/ and sessions/ aside:
    archives the owner made before, and loopd's logs)."""
    for folder in (m.home.memory, m.home.index_dir):
        for path in folder.rglob("*"):
            if path.is_file():
                yield path


def everything_said(m: Memoryd, text: str) -> list[str]:
    out = [m.admin("block", {"json": True}), m.admin("stats", {"json": True})]
    words = text.rstrip(".").split()
    out += [m.admin("search", {"query": w, "k": 10}) for w in words]
    out += [m.recall(w) for w in words]
    for record in m.store.journal.records():
        out.append(m.admin("show", {"id": record.id, "json": True}))
    out.append(m.admin("log", {"n": 1000, "json": True}))
    return out


def build(m: Memoryd, facts: list[str]) -> dict[str, str]:
    """Put facts in every place: memory.md, user.md, notes, session records; id -> text."""
    ids = {}
    m.call({"action": "add", "file": "memory", "text": facts[0]})
    m.call({"action": "add", "file": "user", "text": facts[1]})
    m.call({"action": "note", "text": facts[2]})
    m.call({"action": "add", "file": "memory", "text": facts[3]}, tainted=True)  # a note
    m.call({"action": "add", "file": "memory", "text": facts[4]})
    m.call(
        {
            "action": "consolidate",
            "file": "memory",
            "entries": [{"old": facts[0], "keep": True}, {"old": facts[4], "move": True}],
        }
    )
    m.say("s-one", facts[5], facts[6])
    for f in facts:
        m.recall(f.split()[2])  # the queries go to the recall log
    ids[facts[0]] = "memory.md:1"
    ids[facts[1]] = "user.md:1"
    ids[facts[2]] = "note:0"
    ids[facts[3]] = "note:1"
    ids[facts[4]] = "note:2"
    ids[facts[5]] = "session:s-one:0"
    ids[facts[6]] = "session:s-one:1"
    return ids


@settings(
    max_examples=14,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    pairs=st.lists(
        st.tuples(st.sampled_from(WORDS), st.sampled_from(WORDS)), min_size=7, max_size=7
    ),
    which=st.integers(0, 6),
)
def test_after_forget_nothing_memoryd_writes_or_answers_holds_the_text(
    tmp_path_factory, pairs, which
):
    root = tmp_path_factory.mktemp("forget")
    m = Memoryd(root / "home")
    try:
        facts = [fact(i, p) for i, p in enumerate(pairs)]
        ids = build(m, facts)
        text = facts[which]
        for query in (text.split()[-1], text):
            m.recall(query)  # a query holding the text
        raw = text.encode()
        assert any(raw in path.read_bytes() for path in written_files(m))  # held before
        shown = json.loads(m.admin("forget", {"id": ids[text], "dry_run": True}))
        assert text not in shown["message"] and "cannot be undone" in shown["message"]
        done = json.loads(m.admin("forget", {"id": ids[text]}))
        assert "Session logs are loopd's" in done["message"]
        assert text not in done["message"]
        for path in written_files(m):
            assert raw not in path.read_bytes(), path
        for said in everything_said(m, text):
            assert text not in said
        export = m.data("export", format="jsonl")
        assert raw not in open(export["path"], "rb").read()
        others = [f for f in facts if f != text]
        found = "\n".join(m.recall(f.split()[-1]) for f in others)
        for other in (facts[2], facts[5], facts[6]):
            if other != text:
                assert other in found
        # The key stays forgotten through a reindex.
        m.index.reindex()
        for path in written_files(m):
            assert raw not in path.read_bytes(), path
    finally:
        m.close()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def test_undo_of_a_forget_or_of_an_edit_that_needs_the_text_is_refused(md):
    md.call({"action": "add", "file": "memory", "text": "Alpha fact one."})
    md.call({"action": "add", "file": "memory", "text": "Beta fact two."})
    md.call(
        {
            "action": "consolidate",
            "file": "memory",
            "entries": [
                {"old": "Alpha fact one.", "keep": True},
                {"old": "Beta fact two.", "drop": True},
            ],
        }
    )
    dropping = md.store.journal_index.latest("memory.md").id
    done = md.data("forget", id="note:0")  # the dropped entry, now a note
    with pytest.raises(AdminRefused, match="forgetting cannot be undone"):
        md.admin("undo", done["edits"][-1])
    with pytest.raises(
        AdminRefused, match="would need text the owner has since made memoryd forget"
    ):
        md.admin("undo", dropping)
    assert "Beta fact two." not in md.home.memory_file("memory.md").read_text()


def test_forget_of_an_entry_is_journalled_without_its_text_and_is_no_hand_edit(md):
    md.call({"action": "add", "file": "memory", "text": "Keep this one."})
    md.call({"action": "add", "file": "memory", "text": "Forget this one."})
    done = md.data("forget", id="memory.md:2")
    line = next(r for r in md.store.journal.records() if r.id == done["edits"][0])
    assert line.action == "forget" and line.after == ["Keep this one."]
    assert forgottenmarker.is_marker(line.before[1])
    count = len(md.store.journal.records())
    md.store.detect_hand_edits()
    assert len(md.store.journal.records()) == count


@pytest.mark.parametrize(
    "ref, reason",
    [
        ("note:9", "holds no note"),
        ("memory.md:3", "holds no entries, so there is no memory.md:3"),
        ("session:s-none:4", "holds no record"),
        ("nothing like this", "names nothing to forget"),
    ],
)
def test_forget_of_nothing_is_refused_in_one_line_and_changes_nothing(md, ref, reason):
    before = {p: p.read_bytes() for p in md.home.memory.rglob("*") if p.is_file()}
    with pytest.raises(AdminRefused, match=reason) as e:
        md.admin("forget", {"id": ref})
    assert "\n" not in str(e.value)
    assert {p: p.read_bytes() for p in md.home.memory.rglob("*") if p.is_file()} == before


def test_a_forgotten_session_record_is_not_indexed_again_by_catch_up(md):
    md.say("s-two", "the vault code is seven eight nine", "noted")
    md.data("forget", id="session:s-two:0")
    writer = md.index._write()
    writer.execute("DELETE FROM progress")
    writer.execute("DELETE FROM offsets")  # the catch-up reads the log again from its start
    md.index.catch_up_all()
    assert md.recall("vault").startswith("(no matches")
    assert "noted" in md.recall("noted")


def test_restoring_an_older_backup_keeps_forgotten_session_records_forgotten(md):
    md.say("s-three", "the alarm code is four four two", "ok")
    older = md.data("backup")["path"]
    md.data("forget", id="session:s-three:0")
    shutil.copy(older, md.home.root / "backups" / "older.tar.gz")
    md.data("restore", name="older.tar.gz", replace=True)
    assert "session:s-three:0" in forgotten.keys(md.home)
    md.index.reindex()
    assert md.recall("alarm").startswith("(no matches")


def test_a_forget_stopped_part_way_is_finished_by_its_words(md, monkeypatch):
    from memoryd.data import scrub

    text = "The spare key is under the blue pot."
    md.call({"action": "add", "file": "memory", "text": text})
    md.call({"action": "add", "file": "memory", "text": "Another fact."})

    def crash(*a, **k):
        raise SystemExit("killed")

    monkeypatch.setattr(scrub, "rewrite", crash)
    monkeypatch.setattr(scrub, "finish", crash)
    with pytest.raises(SystemExit):
        md.admin("forget", {"id": "memory.md:1"})
    monkeypatch.undo()
    assert text not in md.home.memory_file("memory.md").read_text()
    assert any(text.encode() in p.read_bytes() for p in md.home.edits.iterdir())  # left behind
    count = len(md.store.journal.records())
    md.store.detect_hand_edits()
    assert len(md.store.journal.records()) == count  # no hand edit: the journal agrees
    md.data("forget", id=text)
    for path in written_files(md):
        assert text.encode() not in path.read_bytes(), path


def test_forgetting_a_note_does_not_index_every_note_again(md, caplog):
    for n in range(5):
        md.call({"action": "note", "text": f"Note number {n} about the garden."})
    with md.index.reader() as conn:
        before = dict(conn.execute("SELECT record, rowid FROM sources WHERE kind = 'noted'"))
    md.data("forget", id="note:1")
    md.call({"action": "note", "text": "A later note about the shed."})
    assert "indexing it again" not in caplog.text
    with md.index.reader() as conn:
        after = dict(conn.execute("SELECT record, rowid FROM sources WHERE kind = 'noted'"))
    assert {k: v for k, v in before.items() if k != 1} == {k: after[k] for k in before if k != 1}
    assert 1 not in after and 5 in after
    assert "shed" in md.recall("shed")


def test_recalls_after_a_forget_still_reach_the_recall_log(md):
    md.call({"action": "note", "text": "The pin is nine nine one."})
    md.recall("The pin is nine nine one.")  # the month file is open now, and holds the text
    md.data("forget", id="note:0")
    md.recall("after the forget")
    md.service.recaller.close()  # flush
    lines = [
        json.loads(line)
        for path in md.home.recalls.iterdir()
        for line in path.read_text().splitlines()
    ]
    assert [line["query"] for line in lines][-1] == "after the forget"
    assert not any("nine nine one" in line["query"] for line in lines)
    assert any(forgottenmarker.is_marker(line["query"]) for line in lines)


def test_forget_acts_only_on_what_the_owner_was_shown(md):
    md.call({"action": "add", "file": "memory", "text": "First entry here."})
    shown = md.data("forget", id="memory.md:1", dry_run=True)
    assert shown["texts"] == ["First entry here."]
    md.call(
        {"action": "replace", "file": "memory", "old": "First entry here.", "text": "Rewritten."}
    )
    held = md.home.memory_file("memory.md").read_bytes()
    with pytest.raises(AdminRefused, match="no longer names what you were shown"):
        md.admin("forget", {"id": "memory.md:1", "check": shown["check"]})
    assert md.home.memory_file("memory.md").read_bytes() == held


def test_a_journal_line_appended_while_forget_prepares_is_scrubbed_too(md):
    from memoryd.data import forget

    text = "The safe combination is left two right nine."
    md.call({"action": "add", "file": "memory", "text": text})
    found = forget.prepare(md.service, "memory.md:1")
    assert found.months  # the month holding it was rewritten up to its end, off the writer
    md.call({"action": "add", "file": "memory", "text": "A later entry."})  # journals the text
    md.service._writer.submit(0, forget.run, md.service, "memory.md:1", found).result()
    found.drop()
    for path in written_files(md):
        assert text.encode() not in path.read_bytes(), path
    assert md.home.memory_file("memory.md").read_text() == "A later entry.\n"
    assert not list(md.home.edits.glob(".*.tmp"))


def test_forget_scrubs_the_saved_journal_index(tmp_path, monkeypatch):
    """The journal's derived index holds entry text and is saved under index/: a forget drops it,
    so the saved copy never keeps what the journal no longer holds."""
    from memoryd.journal import byfile

    monkeypatch.setattr(byfile, "SAVE_BYTES", 1)  # the copy is saved at every catch-up
    m = Memoryd(tmp_path / "home")
    try:
        m.call({"action": "add", "file": "memory", "text": "The vault code is qz7x7qz."})
        m.call({"action": "add", "file": "memory", "text": "Tea at four."})
        saved = m.home.index_dir / "journal-index.json"
        assert b"qz7x7qz" in saved.read_bytes()
        json.loads(m.admin("forget", {"id": "memory.md:1"}))
        assert not saved.exists() or b"qz7x7qz" not in saved.read_bytes()
        m.call({"action": "add", "file": "memory", "text": "Coffee at nine."})
        assert b"Tea at four." in saved.read_bytes()  # saved again, from the scrubbed journal
        assert b"qz7x7qz" not in saved.read_bytes()
        assert "Tea at four." in m.admin("block", {"json": True})
    finally:
        m.close()
