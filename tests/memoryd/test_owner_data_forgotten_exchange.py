"""The marker a forget leaves where a note was is no memory: export leaves it out, and import
skips one (an export made before that), counting it as skipped, so that a forgotten note never comes
back as a note another home recalls."""

import json

import pytest

from memoryd.journal import forgottenmarker
from tests.memoryd.owner_data_harness import Memoryd

KEPT = "The garden gate code is 2291."
GONE = "The vault code is 4471."
HEAD = {"format": "boxmaker-memory-export", "version": 1}


def _exported(m: Memoryd) -> list[dict]:
    path = m.data("export")["path"]
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f.read().splitlines()]


def _note(text: str, number: int) -> dict:
    return {
        "kind": "note",
        "note": "noted",
        "number": number,
        "source": None,
        "text": text,
        "provenance": {
            "file": "notes.md",
            "session": "s1",
            "edit": None,
            "time": "2026-12-01T00:00:00Z",
            "class": "private",
            "untrusted": False,
        },
    }


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def test_export_leaves_out_the_marker_of_a_forgotten_note(md, tmp_path):
    md.call({"action": "note", "text": GONE})
    md.call({"action": "note", "text": KEPT})
    md.admin("forget", {"id": "note:0"})
    assert forgottenmarker.MARKER_PREFIX in md.home.memory_file("notes.md").read_text()
    head, *items = _exported(md)
    assert [(i["text"], i["number"]) for i in items] == [(KEPT, 1)]

    other = Memoryd(tmp_path / "other")
    try:
        name = "in.jsonl"
        (other.home.root / "backups" / name).write_text(
            "\n".join(json.dumps(x) for x in [head, *items]) + "\n"
        )
        out = other.data("import", name=name)
        assert (out["applied"], out["skipped"]) == (1, 0)
        assert forgottenmarker.MARKER_PREFIX not in other.recall("forgotten owner")
    finally:
        other.close()


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize("padded", ["", "  "])
def test_import_skips_a_marker_and_counts_it_as_skipped(md, dry_run, padded):
    marker = padded + forgottenmarker.marker("2026-12-01T10:00Z") + padded
    lines = [HEAD, _note(marker, 0), _note(KEPT, 1)]
    (md.home.root / "backups" / "old.jsonl").write_text(
        "\n".join(json.dumps(x) for x in lines) + "\n"
    )
    out = md.data("import", name="old.jsonl", dry_run=dry_run)
    assert (out["applied"], out["skipped"]) == (1, 1)
    assert out["message"].startswith(("imported 1 of 2 items; 1 not", "would import 1 of 2"))
    assert "line 2: note" in out["lines"][0] and "a forgotten note" in out["lines"][0]
    held = md.home.memory_file("notes.md")
    text = held.read_text() if held.exists() else ""
    assert forgottenmarker.MARKER_PREFIX not in text
    assert (KEPT in text) is not dry_run
    assert forgottenmarker.MARKER_PREFIX not in md.recall("forgotten owner")
