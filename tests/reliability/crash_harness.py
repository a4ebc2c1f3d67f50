"""The crash suite's machinery: homes to crash in, memoryd processes, and the invariants.

A template home is built once with the real MemoryStore and Index (entries in memory.md and
user.md, notes, journal lines, a session log, an index). Each case copies it, starts
crashing_memoryd.py with MEMORYD_CRASH_AT=N, sends one operation, sees the process die by SIGKILL,
restarts memoryd normally on the same home, and checks the crash invariants (below) against
the template (the old state) and a run of the same operation that was not killed (the new state).
"""

import asyncio
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.config import load as load_config
from memoryd.data import backup, exchange
from memoryd.data import snapshot as data_snapshot
from memoryd.errors import MemorydError
from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.memory import entries, notes
from memoryd.memory.store import MemoryStore
from memoryd.server import prepare
from proto.client import request
from proto.errors import ProtoError
from proto.messages import (
    MemoryAdmin,
    MemoryAdminReply,
    MemoryBlock,
    MemoryCall,
    Reindex,
    SessionUpdated,
    ToolRequest,
)
from proto.records import AssistantRecord, ToolResultRecord, UserRecord, append_session_record
from tests.callargs import loose_call
from tests.rawsocket import answers as _answers

REPO = Path(__file__).resolve().parents[2]
WRAPPER = Path(__file__).with_name("crashing_memoryd.py")
SOUL = "You are a careful personal agent.\n"
SESSION = "mm-clean0001"
# The session the memory calls come from: its log (none) is clean. SESSION's own log reads
# untrusted content at turn 3, and memoryd, which reads the caller's log, would refuse its writes.
WRITER = "mm-writer0001"
CLEAN = {"session": SESSION, "call_id": "c-template", "taint": "private", "untrusted": False}
MEMORY = [
    "Owner prefers answers in UTC.",
    "The home server is a Debian box in the hall cupboard.",
    "Backups run nightly at 02:30 to the NAS.",
    "Project Larkspur ships on the second Thursday.",
]
REMOVED = "The old router was retired in August."
USER = ["The owner's name is Robin.", "Robin drinks tea, not coffee."]
IDENTITY = ("memory.md", "user.md")
# What the export that import brings in holds (made from a home of its own): new to the template.
IMPORTED = {
    "memory": ["The garage door code changed in October.", "The car is serviced every March."],
    "user": ["Robin plays the cello on Sundays."],
    "note": "The boiler was serviced in May.",
}
# What forget forgets, by its exact text, and the recall query that would find it: an entry (its
# file rewritten, the journal's copies scrubbed) and a note (notes.md rewritten, its index rows
# purged and listed in forgotten.jsonl).
FORGOTTEN = {
    "forget": (MEMORY[2], "Backups nightly NAS"),
    "forget-note": ("The plumber comes on Tuesday.", "plumber Tuesday"),
}
EDITED = "The home server is a Debian 13 box in the hall cupboard."


def socket_paths(home: Path) -> dict[str, Path]:
    """A case's sockets: under home/run/ as by default, unless that path would pass the 107
    bytes AF_UNIX allows (pytest's temporary paths can); then under a short folder of /tmp
    named after the home, which Memoryd.stop removes."""
    if len(str(home / "run/broker-memory/memory.sock")) <= 100:
        run = home / "run"
    else:
        digest = hashlib.sha256(str(home).encode()).hexdigest()[:12]
        run = Path(tempfile.gettempdir()) / f"crash-{digest}"
    return {
        "loop": run / "loop-memory/memory.sock",
        "broker": run / "broker-memory/memory.sock",
        "admin": run / "owner-memory/admin.sock",
    }


def _say(log: Path, number: int, text: str) -> None:
    append_session_record(
        log, UserRecord(time=f"2026-09-20T14:{number % 60:02d}:00Z", content=text)
    )


def append_turns(log: Path, first: int, turns: int, tainted_at: int | None = None) -> None:
    """Append turns of user, tool call, tool result and answer records to a session log."""
    log.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    for n in range(first, first + turns):
        _say(log, n, f"turn {n}: the launch window moved to Thursday, word{n}")
        t = f"2026-09-20T15:{n % 60:02d}:00Z"
        call = {"id": f"call{n}", "name": "read_file", "arguments": f'{{"path":"/srv/n{n}.txt"}}'}
        append_session_record(log, AssistantRecord(time=t, tool_calls=[call]))
        append_session_record(
            log,
            ToolResultRecord(
                time=t,
                call_id=f"call{n}",
                name="read_file",
                output=f"file text {n}",
                klass="private",
                untrusted=tainted_at is not None and n >= tainted_at,
            ),
        )
        append_session_record(log, AssistantRecord(time=t, content=f"answer {n} about word{n}"))


def write_config(root: Path, review: bool = False) -> Path:
    (root / "soul.md").write_text(SOUL)
    config = root / "memoryd.toml"
    sockets = socket_paths(root / "home")
    config.write_text(
        f'[paths]\nhome = "{root / "home"}"\n[memory]\nreview = {str(review).lower()}\n'
        f'[sockets]\nloop = "{sockets["loop"]}"\nbroker = "{sockets["broker"]}"\n'
        f'admin = "{sockets["admin"]}"\n'
    )
    return config


def build_template(root: Path, review: bool = False) -> Path:
    """A home with entries, notes, journal lines, a session log and its index; returns home."""
    write_config(root, review)
    home = Home(root / "home")
    store = MemoryStore(home, soul_starter=root / "soul.md")
    store.ensure()
    for text in [*MEMORY, REMOVED]:
        store.call(*loose_call({"action": "add", "file": "memory", "text": text}, **CLEAN))
    # The archive restore lays: the home as it is here, before the rest of the template.
    backup.make(home, data_snapshot.take(home), False)
    _export_to(root / "source", home)
    for text in USER:
        store.call(*loose_call({"action": "add", "file": "user", "text": text}, **CLEAN))
    store.call(*loose_call({"action": "note", "text": FORGOTTEN["forget-note"][0]}, **CLEAN))
    store.call(
        *loose_call(
            {"action": "add", "file": "memory", "text": "example.org says the release moved."},
            **{**CLEAN, "untrusted": True},
        ),
    )
    store.call(*loose_call({"action": "remove", "file": "memory", "old": REMOVED}, **CLEAN))
    if review:
        staging = MemoryStore(home, soul_starter=root / "soul.md", review=True)
        staging.call(*loose_call(consolidate_args(), **CLEAN))
    append_turns(home.session_log(SESSION), 0, 5, tainted_at=3)
    index = Index(home)
    index.open()
    index.catch_up_all()
    index.close()
    return home.root


def _export_to(source: Path, home: Home) -> None:
    """Export a home of its own holding IMPORTED into home's backups/ (import's file)."""
    source.mkdir(mode=0o700)
    write_config(source)
    other = Home(source / "home")
    store = MemoryStore(other, soul_starter=source / "soul.md")
    store.ensure()
    for file in ("memory", "user"):
        for text in IMPORTED[file]:
            store.call(*loose_call({"action": "add", "file": file, "text": text}, **CLEAN))
    store.call(*loose_call({"action": "note", "text": IMPORTED["note"]}, **CLEAN))
    made = Path(exchange.export(other, store.journal, "jsonl", store.now())[0])
    shutil.copy2(made, home.root / "backups" / made.name)
    shutil.rmtree(source)


def consolidate_args() -> dict:
    return {
        "action": "consolidate",
        "file": "memory",
        "entries": [
            {"old": MEMORY[0], "keep": True},
            {"old": MEMORY[1], "move": True},
            {"old": MEMORY[2], "drop": True},
            {"old": MEMORY[3], "text": "Project Larkspur ships on the second Thursday monthly."},
            {"text": "The NAS is called vault."},
        ],
    }


def memory_call(arguments: dict, untrusted: bool = False) -> MemoryCall:
    req = ToolRequest(
        session=WRITER, call_id="c-crash", tool="memory", arguments=json.dumps(arguments)
    )
    return MemoryCall(request=req, taint="private", untrusted=untrusted)


def snapshot(home: Path) -> dict[str, bytes]:
    memory = home / "memory"
    return {
        str(p.relative_to(memory)): p.read_bytes()
        for p in sorted(memory.rglob("*"))
        if p.is_file() and not p.name.endswith(".tmp")
    }


@dataclass
class Outcome:
    """What one run of an operation did: killed or not, where, and the trace of points."""

    killed: bool
    point: str | None
    trace: list[str] = field(default_factory=list)


class Memoryd:
    """One memoryd process on a home, crashing (wrapper) or normal (python -m memoryd)."""

    def __init__(self, root: Path):
        self.root = root
        self.home = root / "home"
        self.config = root / "memoryd.toml"
        self.sockets = socket_paths(self.home)
        self.proc: subprocess.Popen | None = None
        self.log = root / "memoryd.log"

    def start(
        self,
        crash_at: int = 0,
        *,
        torn: bool = False,
        from_start: bool = False,
        crashing: bool = True,
    ) -> bool:
        """Start; True once every socket answers and the catch-up after the start is done (its
        log line), False if the process died (was killed) first."""
        env = {**os.environ, "MEMORYD_CRASH_AT": str(crash_at)}
        env["MEMORYD_CRASH_TRACE"] = str(self.root / "trace.txt")
        env["MEMORYD_CRASH_REPORT"] = str(self.root / "crash.txt")
        env["MEMORYD_CRASH_TORN"] = "1" if torn else "0"
        env["MEMORYD_CRASH_FROM"] = "start" if from_start else "serve"
        program = [str(WRAPPER)] if crashing else ["-m", "memoryd"]
        logged = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, *program, "serve", "--config", str(self.config)],
                stdout=subprocess.DEVNULL,
                stderr=log,
                env=env,
            )
        deadline = time.monotonic() + 30
        while not (
            all(_answers(p) for p in self.sockets.values()) and self._caught_up_since(logged)
        ):
            if self.proc.poll() is not None:
                return False
            if time.monotonic() > deadline:
                raise RuntimeError(f"memoryd did not start: {self.log.read_text()}")
            time.sleep(0.01)
        return True

    def _caught_up_since(self, offset: int) -> bool:
        with open(self.log, "rb") as f:
            f.seek(offset)
            return b": caught up, " in f.read()

    def stop(self) -> None:
        """Stop memoryd if it runs (killed or not, its sockets' folder outside the home goes)."""
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                code = self.proc.wait(20)
                # The crash point may come after the answer (the notes.md catch-up a write queues
                # behind it), and so while memoryd stops: killed there, as at any other point.
                crashed = code == -signal.SIGKILL and (self.root / "crash.txt").exists()
                if code != 0 and not crashed:
                    raise RuntimeError(f"memoryd stopped with {code}: {self.log.read_text()}")
        finally:
            run = self.sockets["admin"].parent.parent
            if self.home not in run.parents:
                shutil.rmtree(run, ignore_errors=True)

    def outcome(self) -> Outcome:
        report = self.root / "crash.txt"
        trace = self.root / "trace.txt"
        return Outcome(
            killed=self.proc is not None and self.proc.returncode == -signal.SIGKILL,
            point=report.read_text().strip() if report.exists() else None,
            trace=trace.read_text().splitlines() if trace.exists() else [],
        )


@dataclass(frozen=True)
class Operation:
    """One operation the sweep crashes inside: a name, the socket and message, a preparation."""

    name: str
    socket: str  # loop, broker, admin; "start" for the catch-up at start
    message: object = None
    review: bool = False
    prepare: object = None  # a function of the case's home, run before memoryd starts
    # A function of the case's home, run once memoryd serves and has caught up, before the message.
    after_start: object = None
    # Which file invariants apply: "kept" (what left a file is in notes.md or the journal),
    # "forget" (what left is gone everywhere), "restore" (the home is wholly old or new),
    # "import" (each file whole, holding the old entries and some of the items).
    files: str = "kept"
    # A function (home, op, old, new, ask) run on the restarted memoryd, ask(socket, message) giving
    # (ok, text): a re-run that finishes the operation, and what must hold once it has.
    after_restart: object = None


def run_once(
    template: Path, case: Path, op: Operation, crash_at: int, torn: bool = False
) -> Outcome:
    """Copy the template to case, run op under crashing memoryd with crash_at; the outcome."""
    shutil.copytree(template, case / "home", symlinks=True)
    write_config(case, op.review)
    if op.prepare is not None:
        op.prepare(case / "home")
    memoryd = Memoryd(case)
    up = memoryd.start(crash_at, torn=torn, from_start=op.socket == "start")
    if up and op.after_start is not None:
        op.after_start(case / "home")
    if up and op.socket != "start":
        try:
            request(memoryd.sockets[op.socket], op.message, timeout=20)
        except ProtoError:
            memoryd.proc.wait(10)  # the connection died with the process
    memoryd.stop()
    outcome = memoryd.outcome()
    if not up and not outcome.killed:
        raise RuntimeError(f"memoryd stopped without being killed: {memoryd.log.read_text()}")
    return outcome


def index_rows(db: Path) -> tuple[Counter, dict]:
    """The index's rows as a multiset (without rowids) and its progress table."""
    conn = sqlite3.connect(db)
    try:
        rows = Counter(
            conn.execute(
                "SELECT s.kind, s.session, s.epoch, s.record, s.time, s.role, s.class,"
                " s.untrusted, h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
            )
        )
        progress = dict(conn.execute("SELECT log, records FROM progress"))
    finally:
        conn.close()
    return rows, progress


def fresh_index(home: Path, scratch: Path) -> tuple[Counter, dict]:
    """The index a reindex of home's sessions/ and notes.md gives, built in a copy."""
    copy = scratch / "reindexed"
    shutil.copytree(home, copy, ignore=shutil.ignore_patterns("*.sock", "index"))
    index = Index(Home(copy))
    index.open()
    index.reindex()
    index.close()
    return index_rows(Home(copy).index_db)


def _entries(data: bytes) -> list[str]:
    return entries.parse(entries.decode(data, "file"))


def _journal_lines(home: Path, torn: bool) -> list[dict]:
    lines = []
    for path in sorted((home / "memory/edits").glob("*.jsonl")):
        for raw in path.read_bytes().split(b"\n"):
            if not raw.strip():
                continue
            try:
                lines.append(json.loads(raw))
            except ValueError:
                if not torn:
                    raise AssertionError(
                        f"{path.name}: a line that does not parse: {raw!r}"
                    ) from None
    return lines


def check_invariants(
    case: Path,
    old: dict[str, bytes],
    new: dict[str, bytes],
    op: Operation,
    torn: bool,
    over_sockets: bool = True,
) -> None:
    """Restart memoryd normally on the crashed home and check the crash invariants.

    The restart is a memoryd process answering on its sockets, or (over_sockets false, to keep
    the sweep fast) the same start in this process: memoryd.server.prepare (files, the index
    opened or rebuilt, every log caught up), then the block and a recall from the service.
    """
    home = case / "home"
    if op.files != "restore":  # a restore is judged once the restart has finished it
        _kept(home, old, new, torn, op.files == "forget", op.files == "import")
    if over_sockets:
        _restart_over_sockets(case, op, old, new)
    else:
        _restart_in_process(case, op, old, new)
    leftover = Home(home).index_db.with_name("memory.sqlite3.new")
    assert not leftover.exists(), "the start left a reindex's memory.sqlite3.new behind"
    assert index_rows(Home(home).index_db) == fresh_index(home, case), (
        "the index differs from a reindex of the same logs"
    )


def _wholly_old_or_new(home: Path, op: Operation, old: dict, new: dict, ask) -> None:
    """A restore, once the restart has finished it: the owner's files are all the old home's
    or all the archive's."""

    def owned(files: dict[str, bytes]) -> dict[str, bytes]:
        # the restore's own journal line (its time, the name of its backup) differs run to run
        out = {
            k: _without_restore_lines(v) if k.startswith("edits/") else v
            for k, v in files.items()
            if k in (*IDENTITY, "notes.md") or k.startswith("edits/")
        }
        return {k: v for k, v in out.items() if v or not k.startswith("edits/")}

    now = owned(snapshot(home))
    assert now in (owned(old), owned(new)), (
        f"the home is neither the old one nor the archive's: {sorted(now)}"
    )


def _without_restore_lines(data: bytes) -> bytes:
    def restore(line: bytes) -> bool:
        try:
            return json.loads(line).get("action") == "restore"
        except ValueError:
            return False

    return b"".join(x for x in data.splitlines(keepends=True) if not restore(x))


def _kept(
    home: Path,
    old: dict[str, bytes],
    new: dict[str, bytes],
    torn: bool,
    forgetting: bool = False,
    importing: bool = False,
) -> None:
    now = snapshot(home)
    for name in IDENTITY:
        if importing:  # item by item: each file whole, holding what it held and some items
            extra = set(_entries(now[name])) - set(_entries(old[name]))
            assert extra <= set(_entries(new[name])), f"{name} holds what no item brought"
            continue
        assert now[name] in (old[name], new[name]), f"{name} is neither old nor new"
    journal = _journal_lines(home, torn)
    if forgetting:  # it rewrites notes.md and the journal, and sends nothing to notes.md
        notes.parse(now["notes.md"])
        return
    assert now["notes.md"].startswith(old["notes.md"]), "notes.md did not only grow"
    kept = {e.text for e in notes.parse(now["notes.md"])}
    logged = {e for line in journal for key in ("before", "after") for e in line.get(key, [])}
    # What the operation sends to notes.md (removed, moved, dropped) must be there; what it
    # rewrites (replace, a consolidate rewrite, undo) is kept by the journal's before and after.
    sent = {e.text for e in notes.parse(new["notes.md"])} - {
        e.text for e in notes.parse(old["notes.md"])
    }
    for name in IDENTITY:
        left = set(_entries(old[name])) - set(_entries(now[name]))
        for entry in left:
            if entry in sent:
                assert entry in kept, f"{entry!r} left {name} and is not in notes.md"
            else:
                assert entry in kept | logged, f"{entry!r} left {name}: not in notes or journal"
    new_lines = journal[len(_journal_of(old)) :]
    for line in new_lines:
        if line.get("to") in IDENTITY:
            if importing:  # its line's after is the file as that item left it
                assert _entries(now[line["to"]])[: len(line["after"])] == line["after"], (
                    "a journal line written before its file"
                )
                continue
            assert now[line["to"]] == new[line["to"]], "a journal line written before its file"


def _recall_request() -> MemoryCall:
    recall = ToolRequest(
        session=SESSION, call_id="c-check", tool="recall", arguments='{"query": "Thursday"}'
    )
    return MemoryCall(request=recall, taint="private", untrusted=False)


def _restart_over_sockets(case: Path, op: Operation, old: dict, new: dict) -> None:
    memoryd = Memoryd(case)
    assert memoryd.start(crashing=False), f"memoryd did not restart: {memoryd.log.read_text()}"

    def ask(socket: str, message) -> tuple[bool, str]:
        try:
            answer = request(memoryd.sockets[socket], message, timeout=20)
        except ProtoError as e:
            return False, str(e)
        return _said(answer)

    try:
        block = request(memoryd.sockets["loop"], MemoryBlock(), timeout=20)
        assert block.text.startswith("# soul.md")
        answer = request(memoryd.sockets["broker"], _recall_request(), timeout=20)
        assert answer.ok and answer.output.startswith("[1] "), answer.output
        if op.after_restart is not None:
            op.after_restart(case / "home", op, old, new, ask)
    finally:
        memoryd.stop()


def _said(answer) -> tuple[bool, str]:
    if isinstance(answer, MemoryAdminReply):
        return True, answer.text
    return answer.ok, answer.output


def _restart_in_process(case: Path, op: Operation, old: dict, new: dict) -> None:
    service = prepare(load_config(case / "memoryd.toml"))

    def ask(socket: str, message) -> tuple[bool, str]:
        handler = service.on_admin if socket == "admin" else service.on_broker
        try:
            return _said(asyncio.run(handler(message)))
        except MemorydError as e:  # what memoryd answers as an error over the socket
            return False, str(e)

    try:
        service.index.catch_up_all()  # what the catch-up in the background does once serving
        assert service.store.block().startswith("# soul.md")
        answer = asyncio.run(service.on_broker(_recall_request()))
        assert answer.ok and answer.output.startswith("[1] "), answer.output
        if op.after_restart is not None:
            op.after_restart(case / "home", op, old, new, ask)
    finally:
        service.close()
        service.index.close()


def _journal_of(files: dict[str, bytes]) -> list[dict]:
    lines = []
    for name in sorted(n for n in files if n.startswith("edits/")):
        lines += [json.loads(raw) for raw in files[name].split(b"\n") if raw.strip()]
    return lines


def operations() -> list[Operation]:
    """The operations the sweep crashes inside."""
    replace = {
        "action": "replace",
        "file": "memory",
        "old": MEMORY[1],
        "text": "The home server is a Debian 12 box in the hall cupboard.",
    }
    return [
        Operation(
            "add",
            "broker",
            memory_call({"action": "add", "file": "memory", "text": "The NAS is vault."}),
        ),
        Operation("replace", "broker", memory_call(replace)),
        Operation(
            "remove", "broker", memory_call({"action": "remove", "file": "user", "old": USER[1]})
        ),
        Operation("consolidate", "broker", memory_call(consolidate_args())),
        Operation("note", "broker", memory_call({"action": "note", "text": "Seen on Thursday."})),
        Operation(
            "untrusted-add",
            "broker",
            memory_call(
                {"action": "add", "file": "memory", "text": "A page said Thursday."}, untrusted=True
            ),
        ),
        Operation("undo", "admin", None),  # the message needs the template's journal
        Operation("accept", "admin", None, review=True),
        Operation(
            "session_updated",
            "loop",
            SessionUpdated(session=SESSION),
            after_start=lambda home: append_turns(Home(home).session_log(SESSION), 5, 3),
        ),
        Operation("reindex", "admin", Reindex()),
        Operation("forget", "admin", None, files="forget", after_restart=_forget_finished),
        Operation("forget-note", "admin", None, files="forget", after_restart=_forget_finished),
        Operation("edit", "admin", None),
        Operation(
            "promote",
            "admin",
            # By its text: a note:N is taken only once a search of this memoryd printed it.
            MemoryAdmin(
                command="promote",
                arg=json.dumps({"ref": FORGOTTEN["forget-note"][0], "file": "user"}),
            ),
        ),
        Operation("import", "admin", None, files="import", after_restart=_import_finished),
        Operation("restore", "admin", None, files="restore", after_restart=_wholly_old_or_new),
        Operation("catch-up at start", "start", None, prepare=_new_logs),
    ]


def _new_logs(home: Path) -> None:
    append_turns(Home(home).session_log(SESSION), 5, 3)
    append_turns(Home(home).session_log("mm-second0002"), 0, 3, tainted_at=1)


def admin_message(op: Operation, template: Path) -> MemoryAdmin | None:
    """The undo or accept message for the template's latest edit or waiting item."""
    if op.name == "undo":
        lines = _journal_lines(template, torn=False)
        latest = [line for line in lines if line.get("to") == "memory.md"][-1]
        return MemoryAdmin(command="undo", arg=latest["id"])
    if op.name == "accept":
        pending = (template / "memory/pending.jsonl").read_text().splitlines()
        return MemoryAdmin(command="accept", arg=json.loads(pending[-1])["id"])
    if op.name in FORGOTTEN:
        return MemoryAdmin(command="forget", arg=json.dumps({"id": FORGOTTEN[op.name][0]}))
    if op.name == "edit":
        data = (template / "memory/memory.md").read_bytes()
        text = data.decode().replace(MEMORY[1], EDITED)
        base = hashlib.sha256(data).hexdigest()
        return MemoryAdmin(
            command="edit", arg=json.dumps({"file": "memory", "text": text, "base": base})
        )
    if op.name == "import":
        (name,) = [p.name for p in (template / "backups").glob("*.jsonl")]
        return MemoryAdmin(command="import", arg=json.dumps({"name": name}))
    if op.name == "restore":
        (name,) = [p.name for p in (template / "backups").glob("*.tar.gz")]
        return MemoryAdmin(command="restore", arg=json.dumps({"name": name, "replace": True}))
    return None


def _forget_finished(home: Path, op: Operation, old: dict, new: dict, ask) -> None:
    """The same forget run again finishes it: the text is in no file under memory/, and
    recall does not return it."""
    text, query = FORGOTTEN[op.name]
    ok, said = ask("admin", op.message)
    # Killed after its last write that mattered, the text is held nowhere: that is the answer.
    assert ok or "names nothing to forget" in said, f"the forget run again did not finish: {said}"
    held = [
        str(p.relative_to(home))
        for p in (home / "memory").rglob("*")
        if p.is_file() and text.encode() in p.read_bytes()
    ]
    assert not held, f"the forgotten text is still in {held}"
    recall = ToolRequest(
        session=SESSION, call_id="c-forgot", tool="recall", arguments=json.dumps({"query": query})
    )
    ok, said = ask("broker", MemoryCall(request=recall, taint="private", untrusted=False))
    assert text not in said, f"recall returns the forgotten text: {said}"


def _import_finished(home: Path, op: Operation, old: dict, new: dict, ask) -> None:
    """Each item was applied with its journal line or not at all: importing the file again
    applies the rest, and then each is there exactly once, journalled once."""
    now = snapshot(home)
    there = {e for name in IDENTITY for e in _entries(now[name])}
    there |= {e.text for e in notes.parse(now["notes.md"])}
    journalled = _imported(home)
    for text in _wanted():
        assert journalled[text] == (text in there), f"{text!r}: applied without its journal line"
    ok, said = ask("admin", op.message)
    assert ok, f"the import run again did not finish: {said}"
    now = snapshot(home)
    for name in IDENTITY:
        assert _entries(now[name]) == _entries(new[name]), (
            f"{name} differs from an import not killed"
        )
    texts = Counter(e.text for e in notes.parse(now["notes.md"]))
    assert texts == Counter(e.text for e in notes.parse(new["notes.md"])), (
        "notes.md differs from an import not killed"
    )
    imported = _imported(home)
    assert all(imported[t] == 1 for t in _wanted()), f"import journal lines: {dict(imported)}"


def _wanted() -> list[str]:
    return [*IMPORTED["memory"], *IMPORTED["user"], IMPORTED["note"]]


def _imported(home: Path) -> Counter:
    """How many of the journal's import lines brought each text."""
    return Counter(
        text
        # a line torn by the kill (the torn sweep) is no line: its item's line is recovered
        for line in _journal_lines(home, torn=True)
        if line.get("action") == "import"
        for text in set(line.get("after", [])) - set(line.get("before", []))
    )
