"""Load benchmark: concurrent clients drive memoryd over its sockets for a fixed time.

It generates a home (bench_index's generator: session logs and a notes.md), starts memoryd as a
subprocess on it, and runs --clients asyncio tasks (default 16) for --seconds (default 20), each
picking its next request at random:

- recall (40%) on the brokerd socket, 1 to 3 words from the generator's vocabulary;
- memory note (25%) on the brokerd socket, a text no other request uses;
- memory add or remove (10%): a client with no entry of its own in memory.md adds one (a text of
  its own), else removes the one it added, so memory.md stays under its limit; a refused add
  (memory.md full, say) is a refusal, not an error;
- memory_block (15%) on the loopd socket;
- session_updated (10%) on the loopd socket, after appending one turn (four records) to the
  client's own session log.

It prints requests per second, p50 and p99 latency per kind, errors (must be 0: a failed
connection, an error reply, ok false on anything but a refused add) and lost writes (must be 0),
checked after memoryd has stopped: every acknowledged note is in notes.md and the journal, every
acknowledged add is in the journal and in memory.md unless its remove was acknowledged, every
acknowledged remove is in the journal, gone from memory.md and in notes.md as dropped; and the
index has read every record of every session log and every entry of notes.md. It also prints the
p50 of memory writes in the first and the last quarter of the run, which shows whether a write
costs more as the journal grows.

    .venv/bin/python bench/bench_load.py [--clients 16] [--seconds 20] [--records 20000]
"""

import argparse
import asyncio
import json
import os
import random
import signal
import sqlite3
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import memoryd_proc
from bench_index import Generator, percentile

from memoryd.home import Home
from memoryd.journal.journal import Journal
from memoryd.memory import entries, notes
from proto.client import arequest
from proto.errors import ProtoError
from proto.messages import MemoryBlock, MemoryCall, SessionUpdated, ToolRequest
from proto.records import AssistantRecord, ToolResultRecord, UserRecord, append_session_record

MIX = (("recall", 40), ("note", 25), ("add/remove", 10), ("memory_block", 15), ("session", 10))


class Client:
    """One concurrent client: its session, its outstanding entry, what memoryd acknowledged."""

    def __init__(self, number: int, home: Home, sockets: dict[str, Path], generator: Generator):
        self.number = number
        self.session = f"load-{number:03d}"
        self.home = home
        self.sockets = sockets
        self.generator = generator
        self.rng = random.Random(number)
        self.sequence = 0
        self.records = 0
        self.entry: str | None = None
        self.times: dict[str, list[float]] = defaultdict(list)
        self.writes: list[tuple[float, float]] = []  # (when it started, latency) of each write
        self.errors: Counter = Counter()
        self.refusals: Counter = Counter()
        self.error_samples: list[str] = []
        self.noted: list[str] = []
        self.added: list[str] = []
        self.removed: list[str] = []
        home.session_log(self.session).parent.mkdir(mode=0o700, parents=True, exist_ok=True)

    def _call(self, tool: str, arguments: dict) -> MemoryCall:
        self.sequence += 1
        req = ToolRequest(
            session=self.session,
            call_id=f"c{self.sequence}",
            tool=tool,
            arguments=json.dumps(arguments),
        )
        return MemoryCall(request=req, taint="private", untrusted=False)

    def _text(self, what: str) -> str:
        return f"load {what} {self.number}-{self.sequence} {self.generator.text(4)}"

    def _turn(self) -> None:
        log = self.home.session_log(self.session)
        t = "2026-11-30T12:00:00Z"
        n = self.records
        append_session_record(log, UserRecord(time=t, content=self.generator.text(12)))
        call = {"id": f"t{n}", "name": "read_file", "arguments": '{"path":"/srv/x"}'}
        append_session_record(log, AssistantRecord(time=t, tool_calls=[call]))
        append_session_record(
            log,
            ToolResultRecord(
                time=t,
                call_id=f"t{n}",
                name="read_file",
                output="x",
                klass="private",
                untrusted=False,
            ),
        )
        append_session_record(log, AssistantRecord(time=t, content=self.generator.text(10)))
        self.records += 4

    async def one(self, kind: str) -> None:
        started = time.perf_counter()
        problem = None
        if kind == "recall":
            query = " ".join(self.rng.sample(self.generator.words[:3000], self.rng.randint(1, 3)))
            reply = await arequest(self.sockets["broker"], self._call("recall", {"query": query}))
            problem = None if reply.ok else reply.output
        elif kind == "note":
            text = self._text("note")
            reply = await arequest(
                self.sockets["broker"], self._call("memory", {"action": "note", "text": text})
            )
            if reply.ok:
                self.noted.append(text)
            else:
                problem = reply.output
        elif kind == "add/remove":
            if self.entry is None:
                text = self._text("fact")
                args = {"action": "add", "file": "memory", "text": text}
                reply = await arequest(self.sockets["broker"], self._call("memory", args))
                if reply.ok:
                    self.entry = text
                    self.added.append(text)
                else:
                    self.refusals[kind] += 1
            else:
                args = {"action": "remove", "file": "memory", "old": self.entry}
                reply = await arequest(self.sockets["broker"], self._call("memory", args))
                if reply.ok:
                    self.removed.append(self.entry)
                    self.entry = None
                else:
                    problem = reply.output
        elif kind == "memory_block":
            reply = await arequest(self.sockets["loop"], MemoryBlock())
            problem = None if reply.text.startswith("# soul.md") else reply.text[:80]
        else:
            await asyncio.to_thread(self._turn)
            started = time.perf_counter()  # the request, not the client's own fsync'd appends
            await arequest(self.sockets["loop"], SessionUpdated(session=self.session))
        latency = time.perf_counter() - started
        self.times[kind].append(latency)
        if kind in ("note", "add/remove"):
            self.writes.append((started, latency))
        if problem is not None:
            self.errors[kind] += 1
            self.error_samples.append(f"{kind}: {problem[:200]}")

    async def run(self, deadline: float) -> None:
        kinds, weights = zip(*MIX, strict=True)
        while time.perf_counter() < deadline:
            kind = self.rng.choices(kinds, weights)[0]
            try:
                await self.one(kind)
            except ProtoError as e:
                self.errors[kind] += 1
                self.error_samples.append(f"{kind}: {type(e).__name__}: {e}")


def verify(home: Home, clients: list[Client]) -> tuple[int, list[str]]:
    """Lost writes after the run: acknowledged but missing from the journal, the files or the
    index; and a line per loss."""
    lost: list[str] = []
    journal = Journal(home).records()
    journal_notes = {line.after[0] for line in journal if line.action == "note"}
    journal_adds = {e for line in journal if line.action == "add" for e in line.after}
    journal_removes = {n.text for line in journal if line.action == "remove" for n in line.notes}
    notes_data = home.memory_file("notes.md").read_bytes()
    parsed = notes.parse(notes_data)
    noted = {e.text for e in parsed if e.kind == "noted"}
    dropped = {e.text for e in parsed if e.kind == "dropped"}
    memory = set(entries.parse(home.memory_file("memory.md").read_text(encoding="utf-8")))
    for client in clients:
        for text in client.noted:
            if text not in noted or text not in journal_notes:
                lost.append(f"note {text!r}")
        removed = set(client.removed)
        for text in client.added:
            if text not in journal_adds or (text not in removed and text not in memory):
                lost.append(f"add {text!r}")
        for text in removed:
            if text not in journal_removes or text not in dropped or text in memory:
                lost.append(f"remove {text!r}")
    conn = sqlite3.connect(home.index_db)
    try:
        progress = dict(conn.execute("SELECT log, records FROM progress"))
    finally:
        conn.close()
    for client in clients:
        name = f"sessions/{client.session}/0.jsonl"
        if client.records and progress.get(name) != client.records:
            lost.append(f"index: {name} read to {progress.get(name)} of {client.records}")
    if progress.get("memory/notes.md") != len(parsed):
        lost.append(f"index: notes.md read to {progress.get('memory/notes.md')} of {len(parsed)}")
    return len(lost), lost


async def drive(clients: list[Client], seconds: float) -> float:
    started = time.perf_counter()
    await asyncio.gather(*(c.run(started + seconds) for c in clients))
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--records", type=int, default=20_000)
    args = parser.parse_args(argv)
    print(
        f"cpus {os.cpu_count()}, python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp:
        root = Path(tmp)
        generator = Generator()
        home = generator.home(root / "home", args.records)
        proc = memoryd_proc.start(root, home, log=root / "memoryd.log", wait=("loop", "broker"))
        sockets = memoryd_proc.sockets(home)
        try:
            clients = [Client(n, home, sockets, generator) for n in range(args.clients)]
            elapsed = asyncio.run(drive(clients, args.seconds))
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(60)
        report(clients, elapsed, args, code)
        lost, lines = verify(home, clients)
        print(f"lost writes: {lost}")
        for line in lines[:20]:
            print(f"  lost: {line}")
        errors = sum(sum(c.errors.values()) for c in clients)
        return 0 if errors == 0 and lost == 0 and code == 0 else 1


def report(clients: list[Client], elapsed: float, args, code: int) -> None:
    times: dict[str, list[float]] = defaultdict(list)
    errors: Counter = Counter()
    refusals: Counter = Counter()
    samples: list[str] = []
    for client in clients:
        for kind, values in client.times.items():
            times[kind].extend(values)
        errors.update(client.errors)
        refusals.update(client.refusals)
        samples.extend(client.error_samples)
    total = sum(len(v) for v in times.values())
    print(
        f"{args.clients} clients, {elapsed:.1f} s, {args.records} records indexed at start:"
        f" {total} requests, {total / elapsed:,.0f} requests/s"
    )
    for kind, _ in MIX:
        values = times.get(kind, [])
        if values:
            print(
                f"  {kind:<13} {len(values):>7} requests,"
                f" p50 {percentile(values, 50) * 1e3:7.2f} ms,"
                f" p99 {percentile(values, 99) * 1e3:7.2f} ms, errors {errors[kind]},"
                f" refusals {refusals[kind]}"
            )
    writes = sorted(w for c in clients for w in c.writes)
    if len(writes) >= 8:
        quarter = len(writes) // 4
        first = [latency for _, latency in writes[:quarter]]
        last = [latency for _, latency in writes[-quarter:]]
        print(
            f"  memory writes p50, first quarter of the run {percentile(first, 50) * 1e3:.2f} ms,"
            f" last quarter {percentile(last, 50) * 1e3:.2f} ms"
        )
    acknowledged = sum(len(c.noted) + len(c.added) + len(c.removed) for c in clients)
    print(f"errors: {sum(errors.values())}")
    for line in samples[:10]:
        print(f"  error: {line}")
    print(f"acknowledged writes: {acknowledged}; memoryd exit code {code}")


if __name__ == "__main__":
    sys.exit(main())
