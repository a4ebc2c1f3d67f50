"""A file memoryd keeps, damaged into JSON nested past the parser's depth ("[" 200,000 deep:
json.loads raises RecursionError there, not a ValueError), is damage like any other: memoryd
starts, says the file it passes over, and every memory write goes on. Each reader of such a file
is fed one here, on real files; memoryd is started in-process on a home holding four at once."""

import json
import logging
from pathlib import Path

from memoryd.data import archiveheld, forgetstopped, idsrenamed, scrub
from memoryd.home import Home
from memoryd.index import journallabels
from memoryd.journal import forgottenparse, idsvalue, linefile
from memoryd.memory import shown
from memoryd.trust import seenfile
from tests.memoryd.test_service import SOUL, Running

DEEP = "[" * 200_000 + "]" * 200_000  # 400 KB
MONTH = "2026-12.jsonl"


def _line(edit_id: str, text: str = "the spade") -> str:
    return json.dumps({"id": edit_id, "text": text, "x": "@"}).replace('"@"', DEEP) + "\n"


def _home(tmp_path: Path) -> Home:
    home = Home(tmp_path / "home")
    for folder in (home.memory, home.edits, home.index_dir):
        folder.mkdir(parents=True, exist_ok=True)
    return home


def test_line_ids_and_forgotten_lines(tmp_path):
    raw = _line("2026-12-06-0002").encode()
    assert linefile.line_id(raw) is None  # the journal's own start-of-line look names it
    month = tmp_path / MONTH
    month.write_bytes(b'{"id": "2026-12-06-0001"}\n' + raw)
    assert linefile.all_ids(month) == ["2026-12-06-0001"]
    data = b'{"key": ' + DEEP.encode() + b"}\n"
    assert forgottenparse.parse_whole(data) == (set(), [1], set())
    assert forgottenparse.vouched(data, set()) == frozenset()


def test_small_files_read_whole(tmp_path, caplog):
    home = _home(tmp_path)
    ids = home.memory / ".ids.json"
    ids.write_text('{"edit": ' + "[" * 2000 + "]" * 2000 + "}")  # under its byte cap
    witness = seenfile.path(home)
    witness.write_text('{"points": ' + DEEP + "}")
    printed = tmp_path / "shown.json"
    printed.write_text('{"memory.md": ' + "[" * 2000 + "]" * 2000 + "}")
    with caplog.at_level(logging.WARNING):
        assert idsvalue.read_copy(ids, said=True) == {}
        assert seenfile.load(home) == {}
        assert shown._load(printed) == f"{printed} is damaged"
    said = " ".join(r.getMessage() for r in caplog.records)
    for path in (ids, witness, printed):
        assert f"{path}: " in said


def test_journal_readers(tmp_path):
    home = _home(tmp_path)
    month = home.edits / MONTH
    month.write_text(_line("2026-12-06-0001", "the rake"))
    labels: dict = {}
    journallabels._take(labels, month.read_bytes().rstrip(b"\n"))
    assert labels == {}
    assert list(forgetstopped._lines_before(home, "2026-12-06-0001")) == []
    other = tmp_path / "other" / MONTH
    other.parent.mkdir()
    other.write_text(_line("2026-12-06-0001", "the hoe"))
    assert idsrenamed.renamed([month], [other]) == []  # what it was cannot be told


def test_scrub_and_archives(tmp_path):
    month = tmp_path / MONTH
    month.write_text('{"id": "2026-12-06-0001", "text": "the hoe"}\n' + _line("2026-12-06-0002"))
    assert scrub.count(month, "the spade", lambda value, text: True) == 0
    line = _line("2026-12-06-0002").rstrip("\n").encode()
    sought = [archiveheld._Sought("the spade")]
    assert archiveheld._block_holds(line, ["the spade"], sought)  # may hold it: kept
    assert not archiveheld._value_holds(DEEP, ["the spade"], 0)
    # JSON the parser reads, nested deeper than the walk of its values goes
    parsed = ("[" * 600 + '"the spade"' + "]" * 600).encode()
    assert archiveheld._block_holds(parsed, ["the spade"], sought)


def test_memoryd_starts_and_writes_past_four_such_files(tmp_path, caplog):
    home = tmp_path / "home"
    (tmp_path / "soul.md").write_text(SOUL)
    config = tmp_path / "memoryd.toml"
    config.write_text(f'[paths]\nhome = "{home}"\n')
    running = Running(home, config)
    try:
        running.service.caught_up.wait(20)
        answer = running.call("memory", {"action": "add", "file": "memory", "text": "Spade: loft."})
        assert answer.output.startswith("memory.md updated")
    finally:
        running.stop()
    memory = home / "memory"
    (memory / ".ids.json").write_text('{"edit": ' + "[" * 2000 + "]" * 2000 + "}")
    (home / "index" / "witness.json").write_text('{"points": ' + DEEP + "}")
    (memory / "forgotten.jsonl").write_text('{"key": ' + DEEP + "}\n")
    month = next((memory / "edits").glob("*.jsonl"))
    held = [json.loads(line)["id"] for line in month.read_text().splitlines()]
    damaged_id = held[-1][:-4] + f"{int(held[-1][-4:]) + 1:04d}"
    with open(month, "a") as f:
        f.write(_line(damaged_id))
    with caplog.at_level(logging.WARNING):
        running = Running(home, config)
        try:
            assert running.service.caught_up.wait(20)
            answer = running.call(
                "memory", {"action": "add", "file": "memory", "text": "Rake: door."}, call_id="c2"
            )
            assert answer.output.startswith("memory.md updated"), answer.output
            log = running.admin("log", "")
            # a recall reads forgotten.jsonl (and says its damaged line, as any other)
            found = running.call("recall", {"query": "spade"}, call_id="c3")
            assert found.ok, found.output
        finally:
            running.stop()
    assert "Rake: door." in (memory / "memory.md").read_text()
    assert damaged_id in log  # said damaged
    assert month.read_text().count(damaged_id) == 1  # and its id not given again
    said = " ".join(r.getMessage() for r in caplog.records)
    for name in ("witness.json", ".ids.json", "forgotten.jsonl"):
        assert name in said
    assert "RecursionError" not in said and "decoder.py" not in said
