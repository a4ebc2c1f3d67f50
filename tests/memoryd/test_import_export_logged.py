"""An import and an export each leave one line in memoryd's log at their end, as backup, restore,
forget and reindex do: an import runs on after a bxctl that stopped waiting (Ctrl-C, a timeout),
and its line is then all that tells whether it finished and how far it got."""

import logging

import pytest

from memoryd.data import importrun
from memoryd.errors import AdminRefused
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.test_import_memory import export_of


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def infos(caplog, module: str) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name == module and r.levelno == logging.INFO
    ]


def test_an_export_logs_its_path_and_counts(md, caplog):
    md.call({"action": "add", "file": "memory", "text": "Owner prefers answers in UTC."})
    md.call({"action": "note", "text": "First note."})
    md.call({"action": "note", "text": "Second note."})
    caplog.set_level(logging.INFO)
    out = md.data("export", format="markdown")
    said = infos(caplog, "memoryd.data.exchange")
    assert said == [f"{out['path']}: export written (1 entry, 2 notes)"]


def test_an_import_logs_what_it_applied_and_skipped(md, caplog):
    (md.home.root / "backups" / "in.jsonl").write_bytes(export_of(30))
    md.data("import", name="in.jsonl")
    caplog.set_level(logging.INFO)
    md.data("import", name="in.jsonl", dry_run=True)
    (md.home.root / "backups" / "more.jsonl").write_bytes(export_of(32))
    md.data("import", name="more.jsonl")
    said = infos(caplog, "memoryd.data.importrun")
    folder = md.home.root / "backups"
    assert said[0] == (
        f"{folder / 'in.jsonl'}: would import 0 of 30 items; 30 not (dry run: nothing was written)"
    )
    assert said[1].startswith(f"{folder / 'more.jsonl'}: imported 2 of 32 items; 30 not (edits ")
    assert len(said) == 2


def test_an_import_that_stops_logs_where_and_why(md, caplog, monkeypatch):
    monkeypatch.setattr(importrun, "BATCH_SECONDS", 0.0)  # one item a batch
    (md.home.root / "backups" / "in.jsonl").write_bytes(export_of(50))
    real, ran = importrun._batch, []

    def batch(service, *args):
        real(service, *args)
        ran.append(1)
        if len(ran) == 3:
            service.stopping.set()

    monkeypatch.setattr(importrun, "_batch", batch)
    caplog.set_level(logging.INFO)
    with pytest.raises(AdminRefused) as refused:
        md.admin("import", {"name": "in.jsonl"})
    said = infos(caplog, "memoryd.data.importrun")
    assert said == [f"{md.home.root / 'backups' / 'in.jsonl'}: import {refused.value}"]
    assert "stopped at item 4 of 50 (memoryd is stopping); imported before it: 3 items" in said[0]


def test_an_import_refused_before_anything_is_written_is_logged(md, caplog):
    (md.home.root / "backups" / "in.jsonl").write_bytes(b'{"format": "something else"}\n')
    caplog.set_level(logging.INFO)
    with pytest.raises(AdminRefused) as refused:
        md.admin("import", {"name": "in.jsonl"})
    said = infos(caplog, "memoryd.data.importrun")
    assert said == [f"{md.home.root / 'backups' / 'in.jsonl'}: import {refused.value}"]
