"""The owner's data commands do not run across one another where that made them lie: forget,
import and restore each run alone; backups and exports beside each other (one backup at a time);
a preview or a dry run takes no turn. Refused at once, in one line naming what runs."""

import contextlib
import json
import threading

import pytest

from memoryd.data import backup, exchange, importing
from memoryd.errors import AdminRefused
from memoryd.owner.datalock import DataTurns
from tests.memoryd.owner_data_harness import Memoryd

SECRET = "The spare key is under the blue flowerpot."

# (running, then asked): whether it may start
CASES = [
    ("forget", "forget", False),
    ("forget", "import", False),
    ("forget", "restore", False),
    ("forget", "backup", False),
    ("forget", "export", False),
    ("import", "forget", False),
    ("import", "export", False),
    ("restore", "backup", False),
    ("backup", "forget", False),
    ("export", "import", False),
    ("backup", "backup", False),
    ("backup", "export", True),
    ("export", "export", True),
    ("export", "backup", True),
]


@pytest.mark.parametrize(("running", "asked", "allowed"), CASES)
def test_which_command_may_start_beside_which(running, asked, allowed):
    turns = DataTurns()
    with turns.turn(running):
        if allowed:
            with turns.turn(asked):
                pass
        else:
            article = "an" if running[0] in "aeiou" else "a"
            with pytest.raises(AdminRefused, match=f"{article} {running} is running, and {asked}"):
                with turns.turn(asked):
                    pass
    with turns.turn(asked):  # once it ended, the other starts
        pass


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    m.call({"action": "add", "file": "memory", "text": SECRET})
    m.call({"action": "note", "text": "Launch moved to Thursday."})
    yield m
    m.close()


def _paused(monkeypatch, module, name):
    """module.name made to wait, the first time it is called, until the returned go is set."""
    reached, go = threading.Event(), threading.Event()
    real = getattr(module, name)

    def waiting(*args, **kwargs):
        out = real(*args, **kwargs)
        if not reached.is_set():  # the first call waits; those beside it go on
            reached.set()
            assert go.wait(20)
        return out

    monkeypatch.setattr(module, name, waiting)
    return reached, go


def _in_thread(fn):
    out: dict = {}
    thread = threading.Thread(target=lambda: out.setdefault("answer", fn()))
    thread.start()
    return thread, out


def test_a_forget_is_refused_while_an_import_runs_and_the_text_stays_forgotten(md, monkeypatch):
    name = json.loads(md.admin("export", {"format": "jsonl"}))["path"].rsplit("/", 1)[1]
    reached, go = _paused(monkeypatch, importing, "parse")
    thread, out = _in_thread(lambda: md.admin("import", {"name": name}))
    assert reached.wait(10)
    preview = json.loads(md.admin("forget", {"id": SECRET, "dry_run": True}))
    assert SECRET in preview["texts"]  # a preview takes no turn
    with pytest.raises(AdminRefused, match="an import is running, and forget waits"):
        md.admin("forget", {"id": SECRET})
    go.set()
    thread.join(20)
    assert "answer" in out
    md.admin("forget", {"id": SECRET})
    held = [
        p for p in md.home.memory.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()
    ]
    assert held == []


@pytest.mark.parametrize(
    ("module", "name", "command", "arg"),
    [
        (backup, "make", "backup", {}),
        (exchange, "items", "export", {"format": "jsonl"}),
    ],
)
def test_a_forget_is_refused_while_a_copy_is_made_and_copies_go_beside_each_other(
    md, monkeypatch, module, name, command, arg
):
    reached, go = _paused(monkeypatch, module, name)
    thread, out = _in_thread(lambda: md.admin(command, arg))
    assert reached.wait(10)
    with pytest.raises(AdminRefused, match=f"an? {command} is running, and forget waits"):
        md.admin("forget", {"id": SECRET})
    assert json.loads(md.admin("export", {"format": "jsonl"}))["entries"] == 1
    go.set()
    thread.join(20)
    assert "answer" in out
    forgot = json.loads(md.admin("forget", {"id": SECRET}))
    assert "may still hold it" in forgot["message"] or command == "export"


@pytest.mark.parametrize(
    ("running", "asked", "said"),
    [
        (["export"], "forget", "an export is running, and forget waits for it to end"),
        (["export", "export"], "forget", "2 exports are running, and forget waits for them"),
        (["export", "backup"], "import", "an export and a backup are running, and import waits"),
        (["backup", "export"], "backup", "are running, and backup waits for them to end"),
    ],
)
def test_the_refusal_speaks_of_one_or_several_that_run(running, asked, said):
    turns = DataTurns(share=4)
    with contextlib.ExitStack() as held:
        for command in running:
            held.enter_context(turns.turn(command))
        with pytest.raises(AdminRefused) as refused:
            with turns.turn(asked):
                pass
    assert said in str(refused.value)
    assert str(refused.value).endswith("after it" if len(running) == 1 else "after them")
