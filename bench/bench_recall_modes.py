"""Evaluation of the recall modes: what each finds, how fast, at what memory.

    .venv/bin/python bench/bench_recall_modes.py quality [--conversations 10]
        [--assistant-conversations 6] [--shapes locomo,longmem,agent] [--modes ...]
    .venv/bin/python bench/bench_recall_modes.py quality --written | --held-out | --locomo FILE |
        --longmemeval FILE    # the written evaluation and its held-out set (recall_eval/
        written.py), public files
    .venv/bin/python bench/bench_recall_modes.py quality --written-shapes    # technical,
        Spanish, terse and German memories (recall_eval/written_shapes/), counts per kind
    .venv/bin/python bench/bench_recall_modes.py scale [--sizes 10000,100000] [--modes ...]
        [--against DIR]    # DIR: another checkout's services/ and libs/, alternated with this one

quality: for each generated conversation of each shape (bench/recall_eval/shapes.py, seeded:
seeds 1..N; the rankings were chosen on seeds from 101), a home with its sessions as session
logs (tool calls and their results included), indexed in each mode; every question asked
through recall_on with k=10. A question is found ("any") at k when one of its answers is among
the first k hits, fully found ("all") when every one is; "sessions @5" is the mean count of
distinct sessions in the top 5. Prints per mode, overall and per question kind, and each
mode's lowest margin over the spec's (over every kind, at 5 and 10). hybrid adds two
diagnostic rows: the dense half alone, the question as typed and without its common names.

scale: one home of generated conversations (seeds from 1000) with at least SIZE turns; for each
mode, in a fresh process: the index built from nothing (catch_up_all; build rate in records a
second), recall latency p50/p99 of recall_on over 300 questions of those conversations, and the
process's RSS (VmRSS after the queries, VmHWM the peak) and the index's size on disk
(index_mb). In hybrid, the background embedder runs
for EMBED_SECONDS to measure its rate; the remaining vectors are then written by the benchmark
from a cache of the texts' vectors (the generated turns repeat; the embedder does not cache), so
that the latency is that of a complete matrix. context and hybrid add `spec_part`: the p50 and
p99 of the spec's ranking they read (context.spec_ranked) over the same questions. --against
runs each mode a second time under another checkout's code (PYTHONPATH=DIR/services:DIR/libs),
the two alternated, so a before and an after are measured in one run on a shared machine.
"""

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.recalling

from recall_eval import public, written
from recall_eval.conversations import Conversation
from recall_eval.shapes import KINDS, SHAPES, Tally, conversation

from memoryd.home import Home, ensure_dir
from memoryd.index.index import Index
from tests.recalling import recall_on

MODES = ("spec", "context", "hybrid")
EMBED_SECONDS = 60.0
QUERIES = 300
QUALITY_QUERY_SECONDS = 60.0


def write_home(home: Home, conversations: list[Conversation]) -> int:
    turns = 0
    for conv in conversations:
        for session in conv.sessions:
            path = home.session_log(session.name)
            ensure_dir(path.parent)
            with open(path, "w", encoding="utf-8") as f:
                for number, (role, text) in enumerate(session.turns):
                    f.write(json.dumps(_record(role, text, session.time(number), number)) + "\n")
            turns += len(session.turns)
    return turns


def _record(role: str, text: str, time: str, number: int) -> dict:
    """A session log record: a turn, a tool call ("name arguments") or its result."""
    if role == "call":
        name, _, arguments = text.partition(" ")
        call = {"id": f"c{number}", "name": name, "arguments": arguments}
        return {"type": "assistant", "time": time, "tool_calls": [call]}
    if role == "result":
        return {
            "type": "tool_result",
            "time": time,
            "call_id": f"c{number - 1}",
            "name": "tool",
            "output": text,
            "class": "private",
            "untrusted": False,
        }
    return {"type": role, "time": time, "content": text}


def fresh_index(home: Home, mode: str) -> Index:
    for leftover in home.index_dir.glob("memory.sqlite3*") if home.index_dir.exists() else []:
        leftover.unlink()
    index = Index(home, mode=mode)
    index.open()
    return index


def quality(args) -> None:
    from memoryd.modes import embedworker

    # What is found, not how fast: a question embedded on a busy machine is not answered by its
    # words alone for taking more than the 3 s memoryd gives it.
    embedworker.QUERY_SECONDS = QUALITY_QUERY_SECONDS
    if args.written_shapes:
        for name, convs in written.shapes().items():
            kinds = kinds_of(convs, public.LONGMEM_KINDS)
            _counts(_quality(f"written shapes, {name}", convs, args.modes, kinds), kinds)
        if not (args.locomo or args.longmemeval or args.written or args.held_out):
            return
    if args.locomo or args.longmemeval or args.written or args.held_out:
        filler = args.filler
        also = f", {filler:.0%} generic filler" if filler else ""
        if args.written:
            convs = written.conversations(filler=filler)[: args.limit]
            kinds = kinds_of(convs, public.LONGMEM_KINDS)
            _quality(f"written{also}", convs, args.modes, kinds, args.dense_floors)
        if args.held_out:
            convs = written.held_out(filler=filler)[: args.limit]
            kinds = kinds_of(convs, public.LONGMEM_KINDS)
            _quality(f"held out{also}", convs, args.modes, kinds, args.dense_floors)
        if args.locomo:
            convs = public.locomo(args.locomo)[: args.limit]
            _quality("LoCoMo", convs, args.modes, kinds_of(convs, public.LOCOMO_KINDS.values()))
        if args.longmemeval:
            convs = public.longmemeval(args.longmemeval, limit=args.limit)
            _quality("LongMemEval", convs, args.modes, kinds_of(convs, public.LONGMEM_KINDS))
        return
    for shape in args.shapes:
        count = args.conversations if shape == "locomo" else args.assistant_conversations
        seeds = range(args.first_seed, args.first_seed + count)
        convs = [conversation(shape, seed) for seed in seeds]
        _quality(shape, convs, args.modes, KINDS[shape], args.dense_floors)


def kinds_of(convs: list[Conversation], known) -> tuple[str, ...]:
    """The question kinds present, in the benchmark's order, then any others."""
    present = {q.kind for c in convs for q in c.questions}
    return tuple(k for k in known if k in present) + tuple(sorted(present - set(known)))


def _quality(
    shape: str,
    convs: list[Conversation],
    modes: list[str],
    kinds,
    floors: list[tuple[float, float]] | None = None,
) -> dict[str, Tally]:
    """Each mode's Tally, printed as a table. floors: hybrid's answers also at each of these
    dense floors (hybrid.DENSE_FLOOR), over the same indexes, as rows "hybrid, floor F", with
    the count of questions answered by no hit and of those found less well (any or all, at 5
    or 10) than at the first floor given (-1: no floor)."""

    questions = sum(len(c.questions) for c in convs)
    kinds = collections.Counter(q.kind for c in convs for q in c.questions)
    rows = sum(1 for c in convs for s in c.sessions for role, _ in s.turns if role != "result")
    print(
        f"\n{shape}: {len(convs)} conversations, {rows} indexed turns and calls,"
        f" {questions} questions: {dict(kinds)}",
        flush=True,
    )
    results: dict[str, Tally] = {}
    vectors: dict[str, bytes] = {}  # text -> vector, across conversations (haystacks repeat)
    dense = {"dense alone, as typed": Tally(), "dense alone, names removed": Tally()}
    floored = {
        f"hybrid, floor {a}" + (f" ({b} alone)" if b != a else ""): Tally() for a, b in floors or ()
    }
    unanswered, worse = dict.fromkeys(floored, 0), dict.fromkeys(floored, 0)
    with tempfile.TemporaryDirectory() as tmp:
        for mode in modes:
            found = Tally()
            for n, conv in enumerate(convs):
                home = Home(Path(tmp) / f"c{n}")
                if not home.sessions.exists():
                    write_home(home, [conv])
                index = fresh_index(home, mode)
                index.catch_up_all()
                if mode == "hybrid":  # every vector built before any question
                    index.live.stop_embedder()
                    _fill_vectors(index, vectors)
                for q in conv.questions:
                    hits = recall_on(index, q.text, k=10, session="mm-eval").hits
                    found.add(q, [(hit.session, hit.record) for hit in hits])
                    if mode == "hybrid":
                        for name, bare in zip(dense, (False, True), strict=True):
                            dense[name].add(q, _dense_only(index, q.text, bare))
                    if mode == "hybrid" and floored:
                        from memoryd.modes import hybrid

                        chosen = hybrid.DENSE_FLOOR, hybrid.DENSE_FLOOR_ALONE
                        first = None
                        for (name, tally), floor in zip(floored.items(), floors or (), strict=True):
                            hybrid.DENSE_FLOOR, hybrid.DENSE_FLOOR_ALONE = floor
                            at = recall_on(index, q.text, k=10, session="mm-eval").hits
                            ranked = [(hit.session, hit.record) for hit in at]
                            tally.add(q, ranked)
                            unanswered[name] += not at
                            got = _found(q, ranked)
                            first = got if first is None else first
                            worse[name] += any(a < b for a, b in zip(got, first, strict=True))
                        hybrid.DENSE_FLOOR, hybrid.DENSE_FLOOR_ALONE = chosen
                index.close()
            results[mode] = found
        if "hybrid" in modes:
            results.update(dense)
            results.update(floored)
    _table(results, kinds)
    if floored:
        counts = ", ".join(f"{name} {count}" for name, count in unanswered.items())
        print(f"questions answered by no hit: {counts}")
        counts = ", ".join(f"{name} {count}" for name, count in worse.items())
        print(f"questions found less well than at the first floor: {counts}")
    return results


def _counts(results: dict[str, Tally], kinds) -> None:
    """The questions found, any @5 / any @10 / all @5, per kind and mode: counts, where a kind
    holds too few questions for a rate to say much."""
    modes = [mode for mode in MODES if mode in results]
    print("| kind | n | " + " | ".join(modes) + " |")
    print("| --- " * (2 + len(modes)) + "|")
    first = results[modes[0]]
    for kind in ("all", *kinds):
        n = first.n(kind)
        cells = [
            " / ".join(str(round(results[m].rate(kind, s) * n)) for s in range(3)) for m in modes
        ]
        print(f"| {kind} | {n} | " + " | ".join(cells) + " |")


def _found(question, ranked: list[tuple[str, int]]) -> tuple[bool, ...]:
    """any @5, any @10, all @5, all @10 of one question."""
    answers = set(question.answers)
    tops = (set(ranked[:5]), set(ranked[:10]))
    return (*(bool(top & answers) for top in tops), *(answers <= top for top in tops))


def _table(results: dict[str, Tally], kinds) -> None:
    print("| mode | any @5 / @10 | all @5 / @10 | sessions @5 | " + " | ".join(kinds) + " |")
    print("| --- " * (4 + len(kinds)) + "|")
    for mode, t in results.items():
        cells = [
            f"{t.rate('all', 0):.3f} / {t.rate('all', 1):.3f}",
            f"{t.rate('all', 2):.3f} / {t.rate('all', 3):.3f}",
            f"{t.rate('all', 4):.2f}",
        ]
        for kind in kinds:
            n = t.n(kind)
            cell = f"{t.rate(kind, 0):.2f} / {t.rate(kind, 1):.2f}" if n else "-"
            if kind.startswith("multi") and n:
                cell += f" (all {t.rate(kind, 2):.2f} / {t.rate(kind, 3):.2f})"
            cells.append(cell)
        print(f"| {mode} | " + " | ".join(cells) + " |")
    spec = results.get("spec")
    if spec is None:
        return
    print("(n per kind: " + ", ".join(f"{k} {spec.n(k)}" for k in kinds) + ")")
    for mode in ("context", "hybrid"):
        t = results.get(mode)
        if t is None:
            continue
        worst = min(
            (t.rate(kind, slot) - spec.rate(kind, slot), kind, slot)
            for kind in ("all", *kinds)
            if spec.n(kind)
            for slot in (0, 1)
        )
        print(
            f"{mode}: recall@5 {t.rate('all', 0) / spec.rate('all', 0):.2f}x spec's; lowest"
            f" margin over spec {worst[0]:+.3f} ({worst[1]} @{(5, 10)[worst[2]]})"
        )


def _dense_only(index: Index, query: str, bare: bool) -> list[tuple[str, int]]:
    """The 10 rows of highest cosine with the query (names removed when bare), no neighbours,
    no lexical part."""
    from memoryd.modes.names import dense_text

    live = index.live
    conn = index._take()
    try:
        matrix = live.matrix.refresh(conn)
        text = dense_text(conn, live.counts, query) if bare else query
        cosine = matrix.vectors @ live.embedder.embed([text])[0]
        best = [int(matrix.rowids[i]) for i in cosine.argsort()[::-1][:10]]
        return [
            conn.execute("SELECT session, record FROM sources WHERE rowid = ?", (r,)).fetchone()
            for r in best
        ]
    finally:
        index._give(conn)


def _rss() -> dict[str, int]:
    status = Path("/proc/self/status").read_text()
    out = {}
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) // 1024
    return out


def _fill_vectors(index: Index, cache: dict[str, bytes] | None = None) -> None:
    """Write the vectors still pending, from a cache of the texts' vectors (benchmark only):
    the embedder's own model, each distinct text embedded once."""
    from memoryd.modes.int8 import pack

    conn = index._write()
    cache = {} if cache is None else cache
    # The background batches' path: a batch of 64 gets more time than a question (embedworker).
    embedder = index.live.worker
    rows = conn.execute(
        "SELECT p.rowid, h.text FROM vector_pending p JOIN hits h ON h.rowid = p.rowid"
    ).fetchall()
    todo = sorted({text for _, text in rows} - cache.keys())
    for start in range(0, len(todo), 64):
        chunk = todo[start : start + 64]
        for text, vector in zip(chunk, embedder.embed(chunk), strict=True):
            cache[text] = pack(vector)
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO vectors VALUES (?, ?)", [(r, cache[t]) for r, t in rows])
    conn.execute("DELETE FROM vector_pending")
    conn.execute("COMMIT")


def _hybrid_parts(index: Index, questions: list[str]) -> dict[str, float]:
    """Median cost of the two parts hybrid adds to context: the question's vector, and the
    dense scores over the whole matrix (matrix-vector product and neighbour gather)."""
    from memoryd.modes.hybrid import dense_scores

    conn = index._take()
    matrix = index.live.matrix.refresh(conn)
    index._give(conn)
    embed_ms, dense_ms = [], []
    for q in questions:
        t0 = time.perf_counter()
        vector = index.live.embedder.embed([q])[0]
        t1 = time.perf_counter()
        dense_scores(matrix, vector)
        t2 = time.perf_counter()
        embed_ms.append((t1 - t0) * 1000)
        dense_ms.append((t2 - t1) * 1000)
    return {
        "embed_query_p50_ms": statistics.median(embed_ms),
        "dense_scores_p50_ms": statistics.median(dense_ms),
    }


def _spec_part(index: Index, questions: list[str]) -> dict[str, float]:
    """p50 and p99 of the spec's ranking as context and hybrid read it, in their transaction."""
    from memoryd.modes import context
    from memoryd.search.query import Query

    conn = index._take()
    times = []
    try:
        for q in questions:
            query = Query.parse(q)
            conn.execute("BEGIN")
            t0 = time.perf_counter()
            context.spec_ranked(conn, query, context.SPEC_DEPTH)
            times.append((time.perf_counter() - t0) * 1000)
            conn.execute("COMMIT")
    finally:
        index._give(conn)
    times.sort()
    return {
        "spec_part_p50_ms": statistics.median(times),
        "spec_part_p99_ms": times[int(0.99 * (len(times) - 1))],
    }


def one_scale(home_root: str, mode: str, queries_file: str) -> None:
    home = Home(Path(home_root))
    questions = json.loads(Path(queries_file).read_text())
    started = time.perf_counter()
    index = fresh_index(home, mode)
    rows = index.catch_up_all()
    built = time.perf_counter() - started
    out = {"mode": mode, "rows": rows, "build_rate": rows / built}
    if mode == "hybrid":
        index.live.stop_embedder()  # stop the thread; embed for a fixed time on this one instead
        hybrid = index.live
        done, started = 0, time.perf_counter()
        while time.perf_counter() - started < EMBED_SECONDS:
            done += hybrid.step()
        out["embed_rate"] = done / (time.perf_counter() - started)
        _fill_vectors(index)
    for q in questions[:20]:
        recall_on(index, q, k=10, session="mm-warm")
    times = []
    for q in questions[:QUERIES]:
        t0 = time.perf_counter()
        recall_on(index, q, k=10, session="mm-bench")
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    out["p50_ms"] = statistics.median(times)
    out["p99_ms"] = times[int(0.99 * (len(times) - 1))]
    if mode == "hybrid":
        out.update(_hybrid_parts(index, questions[:50]))
    if mode in ("context", "hybrid"):
        out.update(_spec_part(index, questions[:QUERIES]))
    out.update(_rss())
    index.close()
    files = home.index_dir.glob("memory.sqlite3*")
    out["index_mb"] = round(sum(f.stat().st_size for f in files) / 2**20, 1)
    print(json.dumps(out), flush=True)


def scale(args) -> None:
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            home = Home(Path(tmp) / "home")
            convs, turns, seed = [], 0, 1000
            while turns < size:
                convs.append(conversation("locomo", seed))
                turns += sum(len(s.turns) for s in convs[-1].sessions)
                seed += 1
            write_home(home, convs)
            questions = [q.text for c in convs for q in c.questions]
            queries = Path(tmp) / "queries.json"
            step = max(1, len(questions) // QUERIES)
            queries.write_text(json.dumps(questions[::step]))
            print(f"size {size}: {turns} turns in {len(convs)} conversations", flush=True)
            for mode in args.modes:
                variants = [("this", None)]
                if args.against:
                    other = ("against", f"{args.against}/services:{args.against}/libs")
                    variants = [other, *variants] if size % 2 else [*variants, other]
                for name, path in variants:
                    env = {**os.environ, "PYTHONPATH": path} if path else None
                    run = subprocess.run(
                        [sys.executable, __file__, "one-scale", str(home.root), mode, str(queries)],
                        capture_output=True,
                        text=True,
                        env=env,
                    )
                    if run.returncode:
                        sys.exit(run.stderr[-3000:])
                    print(f"  {name}: {run.stdout.strip()}", flush=True)


def _floors(given: str) -> tuple[float, float]:
    floor, _, alone = given.partition("/")
    return float(floor), float(alone or floor)


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    q = sub.add_parser("quality")
    q.add_argument("--conversations", type=int, default=10, help="of the locomo shape")
    q.add_argument(
        "--assistant-conversations", type=int, default=6, help="of the longmem and agent shapes"
    )
    q.add_argument("--first-seed", type=int, default=1)
    q.add_argument("--shapes", type=lambda s: s.split(","), default=list(SHAPES))
    q.add_argument("--modes", type=lambda s: s.split(","), default=list(MODES))
    q.add_argument("--locomo", help="LoCoMo's locomo10.json: its conversations instead")
    q.add_argument("--longmemeval", help="a LongMemEval file (longmemeval_s.json): its questions")
    q.add_argument(
        "--written",
        action="store_true",
        help="the written evaluation in LongMemEval's shape (recall_eval/written.py) instead",
    )
    q.add_argument(
        "--held-out",
        action="store_true",
        help="the written evaluation's held-out set (nothing was chosen on it) instead",
    )
    q.add_argument(
        "--filler",
        type=float,
        default=0.0,
        help="with --written or --held-out: the share (0 to 1) of each haystack's other"
        " sessions drawn from generic assistant chats (recall_eval/written_filler/)",
    )
    q.add_argument(
        "--written-shapes",
        action="store_true",
        help="the written sets of other shapes (recall_eval/written_shapes/: technical, Spanish,"
        " terse, German), each question's haystack its whole set, with counts per kind",
    )
    q.add_argument("--limit", type=int, help="of the public file's conversations or questions")
    q.add_argument(
        "--dense-floors",
        type=lambda s: [_floors(x) for x in s.split(",")],
        help="hybrid also at each of these dense floors (modes/hybrid.py DENSE_FLOOR; F/A:"
        " DENSE_FLOOR F and DENSE_FLOOR_ALONE A)",
    )
    s = sub.add_parser("scale")
    s.add_argument(
        "--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[10_000, 100_000]
    )
    s.add_argument("--modes", type=lambda s: s.split(","), default=list(MODES))
    s.add_argument("--against", help="another checkout, run alternated with this one")
    o = sub.add_parser("one-scale")
    o.add_argument("home")
    o.add_argument("mode")
    o.add_argument("queries")
    args = parser.parse_args()
    if args.command == "quality":
        quality(args)
    elif args.command == "scale":
        scale(args)
    else:
        one_scale(args.home, args.mode, args.queries)


if __name__ == "__main__":
    main()
