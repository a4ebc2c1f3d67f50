"""What an index was built with, a reindex's leftover, and the cost of one record."""

import json
import logging
import sqlite3
from pathlib import Path

import pytest

from memoryd.config import load
from memoryd.errors import ConfigError
from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.index.settings import FORMAT
from proto.records import ToolResultRecord, UserRecord, append_session_record

T = "2026-09-20T14:02:11Z"


def _say(home: Home, session: str, text: str) -> None:
    log = home.session_log(session)
    log.parent.mkdir(parents=True, exist_ok=True)
    append_session_record(log, UserRecord(time=T, content=text))


def _read_secret(home: Home, session: str) -> None:
    append_session_record(
        home.session_log(session),
        ToolResultRecord(
            time=T, call_id="c1", name="read_file", output="x", klass="secret", untrusted=False
        ),
    )


def _texts(home: Home) -> list[str]:
    conn = sqlite3.connect(home.index_db)
    try:
        return [text for (text,) in conn.execute("SELECT text FROM hits ORDER BY rowid")]
    finally:
        conn.close()


def _open(home: Home, **settings) -> Index:
    index = Index(home, **settings)
    index.open()
    index.catch_up_all()
    return index


def test_an_index_of_an_earlier_format_is_rebuilt_without_what_it_kept(tmp_path, caplog):
    """An index written by an earlier memoryd may hold what this one never writes (the agent's own
    calls in its neighbours' rows): its stamp differs, so the first start builds context's table
    again, from the index's rows (those steps changed nothing else)."""
    home = Home(tmp_path / "home")
    _say(home, "s-one", "kept words")
    _open(home, mode="context").close()
    conn = sqlite3.connect(home.index_db)
    with conn:
        conn.execute("UPDATE settings SET value = ? WHERE name = 'format'", (str(FORMAT - 1),))
        conn.execute("UPDATE context_hits SET near = 'zorblax quixotic'")
    conn.close()
    with caplog.at_level(logging.INFO):
        index = _open(home, mode="context")
    index.close()
    assert f"format {FORMAT - 1} holds its rows as format {FORMAT} does" in caplog.text
    assert "rebuilding it" not in caplog.text
    conn = sqlite3.connect(home.index_db)
    try:
        nears = [near for (near,) in conn.execute("SELECT near FROM context_hits")]
        (stamp,) = conn.execute("SELECT value FROM settings WHERE name = 'format'").fetchone()
    finally:
        conn.close()
    assert nears and not any("zorblax" in near for near in nears)
    assert stamp == str(FORMAT)


@pytest.mark.parametrize(
    ("older", "kept"), [(FORMAT - 1, True), (FORMAT - 2, True), (FORMAT - 3, False)]
)
def test_a_spec_index_formats_behind_is_kept_when_those_steps_changed_no_table_it_holds(
    tmp_path, caplog, older, kept
):
    """The last two formats changed only context's and hybrid's table (its neighbour column, then
    its runs of scripts written without spaces): a spec index of either format before holds what a
    build would (its rows, its rowids), so its stamp is raised in place, not the file rebuilt from
    every log; an index three formats behind (that step changed the spec's notes) is rebuilt."""
    home = Home(tmp_path / "home")
    _say(home, "s-one", "kept words")
    _open(home).close()
    conn = sqlite3.connect(home.index_db)
    with conn:
        conn.execute("UPDATE settings SET value = ? WHERE name = 'format'", (str(older),))
    conn.close()
    with caplog.at_level(logging.INFO):
        index = _open(home)
    index.close()
    assert ("rebuilding it" not in caplog.text) is kept
    assert ("kept, its stamp raised" in caplog.text) is kept
    assert _texts(home) == ["kept words"]
    conn = sqlite3.connect(home.index_db)
    try:
        (stamp,) = conn.execute("SELECT value FROM settings WHERE name = 'format'").fetchone()
    finally:
        conn.close()
    assert stamp == str(FORMAT)


def test_lowering_max_class_rebuilds_the_index_at_start(tmp_path, caplog):
    home = Home(tmp_path / "home")
    _say(home, "s-one", "before the secret")
    _read_secret(home, "s-one")
    _say(home, "s-one", "after the secret")
    _open(home, max_class="secret").close()
    assert _texts(home) == ["before the secret", "after the secret"]
    with caplog.at_level(logging.INFO):
        index = _open(home, max_class="private")
    index.close()
    assert _texts(home) == ["before the secret"]
    assert f"built with format={FORMAT},max_class=secret" in caplog.text
    assert f"configured format={FORMAT},max_class=private" in caplog.text


def test_the_same_settings_keep_the_index(tmp_path, caplog):
    home = Home(tmp_path / "home")
    _say(home, "s-one", "kept")
    _open(home).close()
    inode = home.index_db.stat().st_ino
    with caplog.at_level(logging.INFO):
        _open(home).close()
    assert home.index_db.stat().st_ino == inode and "rebuilding" not in caplog.text


def test_an_index_from_before_the_stamp_is_rebuilt(tmp_path, caplog):
    home = Home(tmp_path / "home")
    _say(home, "s-one", "old index")
    _open(home).close()
    conn = sqlite3.connect(home.index_db)
    conn.execute("DROP TABLE settings")
    conn.commit()
    conn.close()
    with caplog.at_level(logging.INFO):
        _open(home).close()
    assert "built with unknown settings" in caplog.text
    assert "memory-index-damaged" not in caplog.text
    assert _texts(home) == ["old index"]


def test_a_reindex_leftover_is_removed_at_open(tmp_path, caplog):
    home = Home(tmp_path / "home")
    _open(home).close()
    leftover = home.index_db.with_name("memory.sqlite3.new")
    leftover.write_bytes(b"half a database")
    Path(f"{leftover}-wal").write_bytes(b"x")
    with caplog.at_level(logging.INFO):
        _open(home).close()
    assert not leftover.exists() and not Path(f"{leftover}-wal").exists()
    assert f"index {leftover}: removed, left by a reindex that did not finish" in caplog.text


def test_a_record_indexes_its_first_max_record_bytes(tmp_path, caplog):
    home = Home(tmp_path / "home")
    _say(home, "s-one", "é" * 3000)  # 6,000 bytes
    _say(home, "s-one", "short")
    with caplog.at_level(logging.INFO):
        _open(home, max_record_bytes=1025).close()
    long, short = _texts(home)
    assert long == "é" * 512 and short == "short"  # cut on a character
    log = home.session_log("s-one")
    assert f"session log {log}: record 0 (" in caplog.text
    assert "indexed its first 1025 bytes" in caplog.text


def test_a_line_past_the_reader_cap_keeps_its_label(tmp_path, monkeypatch):
    """A huge tool result is read in chunks, never whole, and still raises the session's class."""
    from memoryd.index import sessionrows

    monkeypatch.setattr(sessionrows, "LINE_CAP", 10_000)
    home = Home(tmp_path / "home")
    _say(home, "s-one", "before")
    log = home.session_log("s-one")
    huge = {
        "type": "tool_result",
        "time": T,
        "call_id": "c1",
        "name": "read_file",
        "output": "word " * 200_000,
        "class": "secret",
        "untrusted": True,
    }
    with open(log, "a") as f:
        f.write(json.dumps(huge) + "\n")
    _say(home, "s-one", "after " + "z" * 50_000)
    index = _open(home, max_class="secret", max_record_bytes=2048)
    conn = sqlite3.connect(home.index_db)
    rows = conn.execute(
        "SELECT s.record, s.class, s.untrusted, length(h.text) FROM sources s"
        " JOIN hits h ON h.rowid = s.rowid ORDER BY s.record"
    ).fetchall()
    conn.close()
    index.close()
    assert rows == [(0, "private", 0, 6), (2, "secret", 1, 2048)]


@pytest.mark.parametrize(
    "text",
    [
        "[index]\nmax_record_bytes = 12\n",
        '[index]\nmax_record_bytes = "64k"\n',
        "[memory]\nwrite_deadline = 0\n",
        "[memory]\nwrite_deadline = true\n",
    ],
)
def test_bad_settings_are_refused(tmp_path, text):
    config = tmp_path / "memoryd.toml"
    config.write_text(text)
    with pytest.raises(ConfigError):
        load(config)


def test_settings_defaults_and_values(tmp_path):
    config = tmp_path / "memoryd.toml"
    config.write_text("")
    default = load(config)
    assert (default.max_record_bytes, default.write_deadline) == (65_536, 20.0)
    config.write_text("[index]\nmax_record_bytes = 4096\n[memory]\nwrite_deadline = 7.5\n")
    chosen = load(config)
    assert (chosen.max_record_bytes, chosen.write_deadline) == (4096, 7.5)
