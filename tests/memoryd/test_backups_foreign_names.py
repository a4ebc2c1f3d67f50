"""Files in backups/ that memoryd did not make, though named like its exports or archives (a date
no clock gives, a folder, a link, a FIFO): an export or a backup answers truthfully, and neither
its pruning nor a forget touches them."""

import os

import pytest

from tests.memoryd.owner_data_harness import Memoryd

OLD_EXPORT = "export-20200101T000000Z.jsonl"
OLD_ARCHIVE = "memory-20200101T000000Z.tar.gz"
SECRET = "The safe code is 8812."


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def plant(folder, name: str, kind: str, outside) -> None:
    path = folder / name
    if kind == "file":
        path.write_text(f"the owner's own file: {SECRET}\n")
    elif kind == "folder":
        path.mkdir()
    elif kind == "link":
        path.symlink_to(outside)
    else:
        os.mkfifo(path)


def seen(folder) -> dict:
    """What each entry of folder is, and a file's bytes."""
    out = {}
    for path in folder.iterdir():
        if path.is_symlink() or not path.is_file():
            out[path.name] = "link" if path.is_symlink() else "other"
        else:
            out[path.name] = path.read_bytes()
    return out


def backups(md: Memoryd, tmp_path):
    folder = md.home.root / "backups"
    folder.mkdir(mode=0o700, exist_ok=True)
    outside = tmp_path / "outside.txt"
    outside.write_text(f"outside the home: {SECRET}\n")
    return folder, outside


FOREIGN = [
    ("export-20260230T000000Z.jsonl", "file"),
    ("export-20261301T000000Z.md", "file"),
    ("export-20260101T250000Z-2.jsonl", "file"),
    ("export-20200102T000000Z.jsonl", "folder"),
    ("export-20200103T000000Z.md", "link"),
    ("export-20200104T000000Z.jsonl", "fifo"),
]


@pytest.mark.parametrize("fmt", ["jsonl", "markdown"])
@pytest.mark.parametrize(("name", "kind"), FOREIGN)
def test_an_export_leaves_what_memoryd_did_not_make_and_answers_its_path(
    md, tmp_path, fmt, name, kind
):
    folder, outside = backups(md, tmp_path)
    md.call({"action": "note", "text": "first note"})
    (folder / OLD_EXPORT).write_text("an export of 2020\n")
    plant(folder, name, kind, outside)
    foreign = {n: v for n, v in seen(folder).items() if n != OLD_EXPORT}
    made = md.data("export", format=fmt)
    assert os.path.dirname(made["path"]) == str(folder)
    after = seen(folder)
    assert {n: after.get(n) for n in foreign} == foreign
    assert sorted(after) == sorted([*foreign, os.path.basename(made["path"])])
    assert outside.read_text() == f"outside the home: {SECRET}\n"


@pytest.mark.parametrize(("name", "kind"), [(n, k) for n, k in FOREIGN if k != "fifo"])
def test_forget_leaves_a_file_memoryd_did_not_make_in_backups(md, tmp_path, name, kind):
    folder, outside = backups(md, tmp_path)
    md.call({"action": "note", "text": SECRET})
    plant(folder, name, kind, outside)
    before = seen(folder)
    md.data("forget", id="note:0")
    assert seen(folder) == before
    assert outside.read_text() == f"outside the home: {SECRET}\n"


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("memory-20260230T000000Z.tar.gz", "file"),
        ("memory-20261301T000000Z-2.tar.gz", "file"),
        ("memory-20200102T000000Z.tar.gz", "folder"),
        ("memory-20200103T000000Z.tar.gz", "link"),
        ("memory-20200104T000000Z.tar.gz", "fifo"),
    ],
)
def test_keep_leaves_what_memoryd_did_not_make(md, tmp_path, name, kind):
    folder, outside = backups(md, tmp_path)
    (folder / OLD_ARCHIVE).write_bytes(b"an archive of 2020")
    plant(folder, name, kind, outside)
    foreign = {n: v for n, v in seen(folder).items() if n != OLD_ARCHIVE}
    made = md.data("backup", keep=1)
    assert made["removed"] == [OLD_ARCHIVE]
    after = seen(folder)
    assert {n: after.get(n) for n in foreign} == foreign
    assert sorted(after) == sorted([*foreign, os.path.basename(made["path"])])
    assert outside.read_text() == f"outside the home: {SECRET}\n"
