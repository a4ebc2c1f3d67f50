"""A stop is prompt while a long owner command runs: memoryd says it is stopping before it waits
for the requests in flight, and an import ends between two batches, a forget between two parts of
its catch-up, each with its own answer of how far it got. Nothing answered as applied is lost:
importing the file again brings the rest."""

import json
import shutil
import threading
import time

import pytest

from memoryd.data import forget, importing, importrun
from memoryd.errors import AdminRefused
from memoryd.index import indexer
from proto.client import RemoteError, request
from proto.messages import MemoryAdmin
from proto.records import UserRecord, append_session_record
from tests.memoryd.owner_data_harness import Memoryd, T
from tests.memoryd.test_import_memory import export_of
from tests.memoryd.test_service import SOUL, Running


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()
    shutil.rmtree(tmp_path / "home", ignore_errors=True)


def noted(m: Memoryd) -> list[str]:
    text = m.home.memory_file("notes.md").read_text()
    return [line for line in text.splitlines() if line.startswith("n ")]


@pytest.mark.parametrize("batches", [0, 1, 3])
def test_an_import_ends_between_two_batches_when_memoryd_stops(md, monkeypatch, batches):
    monkeypatch.setattr(importrun, "BATCH_SECONDS", 0.0)  # one item a batch
    (md.home.root / "backups" / "in.jsonl").write_bytes(export_of(50))
    real, ran = importrun._batch, []

    def batch(service, *args):
        real(service, *args)
        ran.append(1)
        if len(ran) == batches:
            service.stopping.set()  # the stop signal, while the import's batch runs

    monkeypatch.setattr(importrun, "_batch", batch)
    if batches == 0:
        md.service.stopping.set()
    with pytest.raises(AdminRefused) as refused:
        md.admin("import", {"name": "in.jsonl"})
    said = str(refused.value)
    assert said.startswith(f"refused: the import stopped at item {batches + 1} of 50 ")
    assert "(memoryd is stopping)" in said
    assert said.endswith("importing the file again brings the rest (what is there is skipped)")
    if batches:
        assert f"imported before it: {batches} item" in said
    else:
        assert "nothing was imported" in said
    assert noted(md) == [f"n {n}" for n in range(batches)]  # each applied item stands
    md.service.stopping.clear()  # memoryd started again
    again = md.data("import", name="in.jsonl")
    assert (again["applied"], again["skipped"]) == (50 - batches, batches)
    assert noted(md) == [f"n {n}" for n in range(50)]


def test_a_dry_run_ends_when_memoryd_stops_and_writes_nothing(md, monkeypatch):
    (md.home.root / "backups" / "in.jsonl").write_bytes(export_of(50))
    real, decided = importing.decide, []

    def decide(*args):
        decided.append(1)
        if len(decided) == 5:
            md.service.stopping.set()
        return real(*args)

    monkeypatch.setattr(importing, "decide", decide)
    journal = sorted(md.home.edits.iterdir())
    with pytest.raises(AdminRefused) as refused:
        md.admin("import", {"name": "in.jsonl", "dry_run": True})
    assert str(refused.value) == (
        "refused: the dry run stopped at item 6 of 50 (memoryd is stopping); nothing was written"
    )
    assert noted(md) == [] and sorted(md.home.edits.iterdir()) == journal


def test_a_forgets_catch_up_ends_between_two_parts_when_memoryd_stops(md, monkeypatch):
    monkeypatch.setattr(indexer, "PART_RECORDS", 2)
    md.call({"action": "add", "file": "memory", "text": "Locker code is 4711."})
    path = md.home.session_log("s-backlog")
    path.parent.mkdir(parents=True, mode=0o700)
    for n in range(10):
        append_session_record(path, UserRecord(time=T, content=f"Said {n}."))
    held = md.home.memory_file("memory.md").read_bytes()
    real, parts = md.index.catch_up_session_part, []

    def part(session: str):
        parts.append(session)
        md.service.stopping.set()
        return real(session)

    monkeypatch.setattr(md.index, "catch_up_session_part", part)
    with pytest.raises(AdminRefused) as refused:
        forget.prepare(md.service, "memory.md:1").drop()
    assert str(refused.value) == (
        "refused: memoryd is stopping; nothing was forgotten: run forget again once it is back"
    )
    assert len(parts) == 1  # one part, not the whole backlog
    assert md.home.memory_file("memory.md").read_bytes() == held


def test_memoryd_stops_within_seconds_during_a_long_import_and_says_how_far(tmp_path):
    home = tmp_path / "home"
    (tmp_path / "soul.md").write_text(SOUL)
    config = tmp_path / "memoryd.toml"
    config.write_text(f'[paths]\nhome = "{home}"\n')
    running = Running(home, config)
    try:
        (home / "backups").mkdir(exist_ok=True, mode=0o700)
        (home / "backups" / "big.jsonl").write_bytes(export_of(20_000))  # some 15 s to apply
        got: list = []
        ask = MemoryAdmin(command="import", arg=json.dumps({"name": "big.jsonl"}))

        def importing() -> None:
            try:
                got.append(request(running.cfg.admin_socket, ask, timeout=120))
            except RemoteError as e:
                got.append(e)

        asker = threading.Thread(target=importing)
        asker.start()
        notes_md = home / "memory" / "notes.md"
        deadline = time.monotonic() + 30
        while b"n 0\n" not in notes_md.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.05)
        started = time.monotonic()
        running.stop()  # what SIGTERM does: the server's stop, then the service's close
        took = time.monotonic() - started
        asker.join(30)
    finally:
        running.stop()
    assert took < 5, f"the stop took {took:.1f} s"
    assert len(got) == 1 and isinstance(got[0], RemoteError), got
    said = str(got[0])
    assert "(memoryd is stopping); imported before it:" in said
    applied = int(said.split("imported before it: ")[1].split(" ")[0].replace(",", ""))
    assert 0 < applied < 20_000
    notes = notes_md.read_text().splitlines()
    assert sum(1 for line in notes if line.startswith("n ")) == applied  # each one answered stands
