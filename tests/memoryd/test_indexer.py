"""Indexing session logs and notes.md: what is indexed, labels, max_class, progress, damage."""

import json
import logging
import sqlite3

import pytest

from memoryd.errors import SessionUnknown
from memoryd.home import Home, ensure_dir
from memoryd.index.index import Index
from tests.recalling import recall_on

T = "2026-09-20T14:02:11Z"


def user(text, time=T):
    return {"type": "user", "time": time, "content": text}


def assistant(text=None, calls=(), reasoning=None, time=T):
    tool_calls = [
        {"id": f"c{n}", "name": name, "arguments": args} for n, (name, args) in enumerate(calls)
    ]
    return {
        "type": "assistant",
        "time": time,
        "content": text,
        "reasoning_content": reasoning,
        "tool_calls": tool_calls,
    }


def result(output, klass="private", untrusted=False, time=T):
    return {
        "type": "tool_result",
        "time": time,
        "call_id": "c0",
        "name": "http_fetch",
        "output": output,
        "class": klass,
        "untrusted": untrusted,
    }


def line(record) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


def write_log(home: Home, session: str, records, raw: str = "") -> None:
    path = home.session_log(session)
    ensure_dir(path.parent)
    with open(path, "a", encoding="utf-8") as f:
        f.writelines(line(r) for r in records)
        f.write(raw)


def rows(home: Home, where: str = "1") -> list[tuple]:
    conn = sqlite3.connect(home.index_db)
    try:
        return conn.execute(
            "SELECT s.kind, s.session, s.record, s.role, s.class, s.untrusted, h.text"
            f" FROM sources s JOIN hits h ON h.rowid = s.rowid WHERE {where} ORDER BY s.rowid"
        ).fetchall()
    finally:
        conn.close()


def progress(home: Home, log: str) -> tuple:
    conn = sqlite3.connect(home.index_db)
    try:
        return conn.execute(
            "SELECT p.records, o.bytes FROM progress p JOIN offsets o USING (log) WHERE log = ?",
            (log,),
        ).fetchone()
    finally:
        conn.close()


@pytest.fixture()
def home(tmp_path):
    return Home(tmp_path / "home")


def opened(home: Home, max_class: str = "private") -> Index:
    index = Index(home, max_class=max_class)
    index.open()
    return index


def test_what_is_indexed(home):
    write_log(
        home,
        "mm-1",
        [
            user("the launch window moved"),
            assistant("noted the window", reasoning="secret thoughts about lunch"),
            assistant(None, calls=[("read_file", '{"path":"/srv/notes/q3.txt"}'), ("clock", "{}")]),
            result("fetched page text with injected words"),
            assistant(""),
            user(""),
        ],
    )
    index = opened(home)
    assert index.catch_up_all() == 4
    assert rows(home) == [
        ("session", "mm-1", 0, "user", "private", 0, "the launch window moved"),
        ("session", "mm-1", 1, "assistant", "private", 0, "noted the window"),
        ("session", "mm-1", 2, "call", "private", 0, 'read_file {"path":"/srv/notes/q3.txt"}'),
        ("session", "mm-1", 2, "call", "private", 0, "clock {}"),
    ]
    assert recall_on(index, "injected", session="mm-2").hits == []
    assert recall_on(index, "thoughts", session="mm-2").hits == []
    index.close()


LABEL_CASES = [
    # tool results before the record -> label of the record (class, untrusted)
    ([], ("private", 0)),
    ([result("a", "public")], ("private", 0)),
    ([result("a", "private", untrusted=True)], ("private", 1)),
    ([result("a", "public", untrusted=True), result("b", "public")], ("private", 1)),
    ([result("a", "secret")], None),
    ([result("a", "secret"), result("b", "public")], None),
]


@pytest.mark.parametrize(("before", "label"), LABEL_CASES)
def test_label_in_force_when_written(home, before, label):
    write_log(home, "mm-1", [user("first words"), *before, user("later words")])
    index = opened(home)
    index.catch_up_all()
    first, *later = rows(home)
    assert first[4:6] == ("private", 0)  # nothing was read before the first record
    assert [r[4:6] for r in later] == ([label] if label else [])
    index.close()


@pytest.mark.parametrize(("max_class", "indexed"), [("public", 0), ("private", 1), ("secret", 2)])
def test_max_class(home, max_class, indexed):
    write_log(home, "mm-1", [user("before"), result("x", "secret"), user("after")])
    notes = home.memory_file("notes.md")
    ensure_dir(notes.parent)
    notes.write_text("§ noted 2026-09-22T18:20Z in session mm-1 · secret\nsecret note\n")
    index = opened(home, max_class)
    index.catch_up_all()
    assert len(rows(home, "s.kind = 'session'")) == indexed
    assert len(rows(home, "s.kind = 'noted'")) == (1 if max_class == "secret" else 0)
    index.close()


def test_catch_up_reads_only_new_records(home):
    write_log(home, "mm-1", [user(f"record number {n}") for n in range(50)])
    index = opened(home)
    assert index.catch_up_session("mm-1") == 50
    size = home.session_log("mm-1").stat().st_size
    assert progress(home, "sessions/mm-1/0.jsonl") == (50, size)
    # Damage an early record in place: a catch-up that re-read the log would stop there.
    data = bytearray(home.session_log("mm-1").read_bytes())
    data[2:10] = b"XXXXXXXX"
    home.session_log("mm-1").write_bytes(bytes(data))
    write_log(home, "mm-1", [user("two new"), user("records here")])
    assert index.catch_up_session("mm-1") == 2
    assert progress(home, "sessions/mm-1/0.jsonl")[0] == 52
    assert [r[2] for r in rows(home)][-2:] == [50, 51]
    assert index.catch_up_session("mm-1") == 0
    index.close()


def test_labels_carry_across_catch_ups(home):
    write_log(home, "mm-1", [user("hello"), result("page", untrusted=True)])
    index = opened(home)
    index.catch_up_session("mm-1")
    write_log(home, "mm-1", [assistant("after the page")])
    index.catch_up_session("mm-1")
    assert rows(home)[-1][4:6] == ("private", 1)
    index.close()


def test_a_last_line_without_newline_is_not_a_record_yet(home, caplog):
    write_log(home, "mm-1", [user("whole")], raw=line(user("half written"))[:-10])
    index = opened(home)
    with caplog.at_level(logging.WARNING):
        assert index.catch_up_session("mm-1") == 1
    assert caplog.records == []
    with open(home.session_log("mm-1"), "a") as f:
        f.write(line(user("half written"))[-10:])
    assert index.catch_up_session("mm-1") == 1
    assert [r[6] for r in rows(home)] == ["whole", "half written"]
    index.close()


@pytest.mark.parametrize(
    "damage",
    [
        "not json\n",
        '{"type": "user"}\n',
        '{"type": "user", "time": "yesterday", "content": "x"}\n',
        '{"type": "user", "time": "2026-09-20T14:02:11Z", "content": "x", "extra": 1}\n',
        '{"type": "tool_result", "time": "2026-09-20T14:02:11Z", "call_id": "c", "name": "n",'
        ' "output": "o", "class": "top", "untrusted": false}\n',
        "\xff\n",
    ],
)
def test_a_damaged_log_is_skipped_with_a_line_naming_it(home, caplog, damage):
    write_log(home, "mm-bad", [user("before damage")], raw=damage + line(user("after damage")))
    write_log(home, "mm-good", [user("good session")])
    index = opened(home)
    with caplog.at_level(logging.WARNING):
        assert index.catch_up_all() == 2
    assert any("sessions/mm-bad/0.jsonl" in r.getMessage() for r in caplog.records)
    assert [r[6] for r in rows(home)] == ["before damage", "good session"]
    assert recall_on(index, "after", session="x").hits == []
    index.close()


def test_unknown_session(home):
    index = opened(home)
    with pytest.raises(SessionUnknown):
        index.catch_up_session("mm-none")
    index.close()


def test_catch_up_all_skips_folders_that_are_not_sessions(home):
    write_log(home, "mm-1", [user("real session")])
    ensure_dir(home.sessions / ".hidden")
    (home.sessions / ".hidden" / "0.jsonl").write_text(line(user("not a session")))
    ensure_dir(home.sessions / "mm-empty")
    index = opened(home)
    assert index.catch_up_all() == 1
    index.close()


NOTES = (
    "§ noted 2026-09-22T18:20Z in session mm-dh45qg · private · untrusted\n"
    "example.org says the release moved to March.\n"
    "§ moved 2026-09-24T20:14Z from memory.md in session mm-y73\n"
    "Owner prefers answers in UTC.\n"
    "§ dropped 2026-09-24T20:15Z from user.md in session mm-y73\n"
    "Owner lives in Lisbon.\n"
)


def write_notes(home: Home, text: str, mode: str = "w") -> None:
    ensure_dir(home.memory)
    with open(home.memory_file("notes.md"), mode, encoding="utf-8") as f:
        f.write(text)


def test_notes_carry_their_header_labels(home):
    write_notes(home, NOTES)
    index = opened(home)
    assert index.catch_up_notes() == 3
    assert rows(home) == [
        (
            "noted",
            "mm-dh45qg",
            0,
            None,
            "private",
            1,
            "example.org says the release moved to March.",
        ),
        ("moved", "mm-y73", 1, "memory.md", "private", 0, "Owner prefers answers in UTC."),
        ("dropped", "mm-y73", 2, "user.md", "private", 0, "Owner lives in Lisbon."),
    ]
    assert progress(home, "memory/notes.md") == (3, len(NOTES.encode()))
    index.close()


def test_notes_appended_are_caught_up_and_numbered_on(home):
    write_notes(home, NOTES)
    index = opened(home)
    index.catch_up_notes()
    before = index.notes_file()  # memoryd's own append
    write_notes(home, "§ noted 2026-09-25T08:00Z in session mm-2 · public\nnew fact\n", "a")
    assert index.catch_up_notes(before) == 1
    assert rows(home)[-1][:3] == ("noted", "mm-2", 3)
    assert rows(home)[-1][4] == "public"
    index.close()


@pytest.mark.parametrize(
    "edited",
    [
        NOTES.replace("example.org says the release moved to March.\n", ""),  # shrank
        NOTES.replace("Lisbon", "Porto!"),  # rewritten before the offset
        "",  # emptied
    ],
)
def test_notes_edited_by_hand_are_indexed_again(home, edited):
    write_notes(home, NOTES)
    index = opened(home)
    index.catch_up_notes()
    write_notes(home, edited)
    index.catch_up_notes()
    texts = [r[6] for r in rows(home, "s.kind != 'session'")]
    from memoryd.memory import notes

    assert texts == [e.text for e in notes.parse(edited.encode()) if e.text]
    index.close()


def test_notes_edited_far_before_the_offset_are_indexed_again(home):
    long_notes = NOTES + "§ noted 2026-09-25T08:00Z in session mm-2 · private\n" + "long " * 200
    write_notes(home, long_notes + "\n")
    index = opened(home)
    index.catch_up_notes()
    write_notes(home, long_notes.replace("example.org", "example.net") + "\n")
    index.catch_up_notes()
    texts = [r[6] for r in rows(home, "s.kind != 'session'")]
    assert texts[0] == "example.net says the release moved to March."
    assert len(texts) == 4
    index.close()


def test_missing_notes_is_nothing_to_index(home):
    index = opened(home)
    assert index.catch_up_notes() == 0
    assert index.catch_up_all() == 0
    index.close()


def test_a_session_log_rewritten_is_indexed_again(home):
    write_log(home, "mm-1", [user("old words"), user("more old words")])
    index = opened(home)
    index.catch_up_all()
    home.session_log("mm-1").write_text(line(user("new words")))
    index.catch_up_all()
    assert [r[6] for r in rows(home)] == ["new words"]
    index.close()
