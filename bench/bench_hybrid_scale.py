"""Recall mode hybrid at a million records: latency, memory, and how much of the exact cosine top
10 the approximate search finds.

    .venv/bin/python bench/bench_hybrid_scale.py [--size 1000000] [--queries 300] [--against DIR]
        [--keep DIR]

One home of generated conversations (recall_eval, seeds from 1000) with at least SIZE turns,
indexed from nothing in mode hybrid by catch_up_all (the embedder thread stopped). The vectors are
SYNTHETIC: embedding a million turns takes hours on this machine (bench_embed.py gives the real
rate), so each row gets a vector drawn from a Gaussian with the mean and covariance of the real
model's vectors of 1,000 of these turns (so the spectrum, and with it how hard the nearest
neighbours are to find, is the model's), normalised and stored as memoryd stores them (int8).
The questions are the conversations' own, embedded by the real model.

Then, in a fresh process (its memory is memoryd's): the index opened, the vector search index
built as memoryd builds it (timed), and --queries recalls through recall_on (k=10): p50 and p99;
VmRSS and VmHWM after them. Then, for each question, the dense half alone, in its parts: the
question embedded (by the embedding child), the ANN's candidates, their scoring from the table
(p50 and p99 of each, and of their sum), the lexical half's ranking (context's top 40 and the
bound of the question's weight) and the spec's ranking it reads (context.spec_ranked), both within
hybrid's READ_BUDGET, and how much of the exact answer each keeps: the share of the exact top
10's positions where the budgeted list holds the same score (rows of equal score may differ, as
FTS5 orders them only by rowid), and the questions whose top 10 is all exact; and the recalls
once more with the budget off: how much of those exact answers' top 5 and top 10 the budgeted
recalls held. Then 100 questions of each of two shapes the conversations do not ask
(other_questions: a name no row holds, common words alone): p50, p99 and the slowest recall of
each. Then WRITTEN_BETWEEN of the questions again, each after a turn written to a session log
and indexed (as an owner's recalls come, between the turns of a conversation): p50 and p99 of
the recalls alone (the home keeps those turns, a few hundred over every run). Last, for each
question, the exact cosine top 10 over every stored vector (a scan of the
table) against the approximate search's top 10 (ann.Ann's candidates, scored again from the
table by vectors.around): the share found.

--keep DIR builds the home in DIR and, run again with the same size, measures it without
building it again (the build of a million records takes several minutes).

--against DIR measures the same index a second time under another checkout's code
(PYTHONPATH=DIR/services:DIR/libs), the two alternated (ROUNDS times each), so a before and an
after are compared in one run on a shared machine. The index is built once, by this checkout.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_recall_modes import write_home
from recall_eval.conversations import conversation

from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.modes import context, embed, hybrid, int8, stopwords, vectors
from memoryd.search import maxscore
from memoryd.search.query import Query
from proto.records import UserRecord, append_session_record
from tests.recalling import recall_on

SAMPLE_TEXTS = 1_000
# Questions of other shapes than the conversations' own, for the tail: how many of each.
OTHER_QUESTIONS = 100
WRITTEN_BETWEEN = 100
WRITTEN_SESSION = "bench-written-between"
WRITTEN_TURN = "zq kettle vlorp grommet"  # no word of the conversations
WRITE_CHUNK = 50_000


def _status() -> dict[str, int]:
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            out[key] = int(value.split()[0]) // 1024
    return out


def _open(home: Home) -> Index:
    index = Index(home, mode="hybrid")
    index.open()
    index.live.stop_embedder()  # the vectors are written by this benchmark
    return index


def build(home_root: str, model_file: str) -> None:
    """Index the home and write a synthetic vector for every row."""
    home = Home(Path(home_root))
    started = time.perf_counter()
    index = _open(home)
    rows = index.catch_up_all()
    built = time.perf_counter() - started
    model = np.load(model_file)
    mean, basis = model["mean"], model["basis"]
    rng = np.random.default_rng(7)
    conn = index._write()
    started = time.perf_counter()
    last = 0
    while True:
        pending = [
            r
            for (r,) in conn.execute(
                "SELECT rowid FROM vector_pending WHERE rowid > ? ORDER BY rowid LIMIT ?",
                (last, WRITE_CHUNK),
            )
        ]
        if not pending:
            break
        z = rng.standard_normal((len(pending), basis.shape[0])).astype(np.float32)
        drawn = mean + z @ basis
        drawn /= np.linalg.norm(drawn, axis=1, keepdims=True)
        packed = int8.quantise(drawn)
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO vectors VALUES (?, ?)",
            [(r, packed[i].tobytes()) for i, r in enumerate(pending)],
        )
        conn.execute("DELETE FROM vector_pending WHERE rowid <= ?", (pending[-1],))
        conn.execute("COMMIT")
        last = pending[-1]
    filled = time.perf_counter() - started
    index.close()
    print(json.dumps({"rows": rows, "build_rate": rows / built, "vectors_s": filled}), flush=True)


def _exact_top(home: Home, queries: np.ndarray, k: int = 10) -> list[set[int]]:
    """The k rowids of highest cosine for each query, over every stored vector."""
    import sqlite3

    conn = sqlite3.connect(home.index_db)
    best_scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
    best_ids = np.zeros((len(queries), k), dtype=np.int64)
    last = 0
    while True:
        rows = conn.execute(
            "SELECT rowid, vector FROM vectors WHERE rowid > ? ORDER BY rowid LIMIT ?",
            (last, WRITE_CHUNK),
        ).fetchall()
        if not rows:
            break
        ids = np.array([r[0] for r in rows])
        scores = queries @ int8.unpack([r[1] for r in rows]).T
        all_scores = np.concatenate([best_scores, scores], axis=1)
        all_ids = np.concatenate([best_ids, np.broadcast_to(ids, scores.shape)], axis=1)
        top = np.argpartition(-all_scores, k - 1, axis=1)[:, :k]
        best_scores = np.take_along_axis(all_scores, top, axis=1)
        best_ids = np.take_along_axis(all_ids, top, axis=1)
        last = rows[-1][0]
    conn.close()
    return [set(map(int, row)) for row in best_ids]


def _against_exact(index: Index, questions: list[str], answers: list[list]) -> dict[str, float]:
    """The same recalls with hybrid's budget off (every lexical list exact): the share of their
    top 5 and top 10 the budgeted recalls held, and the questions answered alike."""
    budget, hybrid.READ_BUDGET = hybrid.READ_BUDGET, None
    try:
        exact = [
            [(hit.session, hit.record) for hit in recall_on(index, q, k=10, session="mm-x").hits]
            for q in questions
        ]
    finally:
        hybrid.READ_BUDGET = budget
    pairs = list(zip(answers, exact, strict=True))
    return {
        "exact_top5_held": round(
            statistics.mean(len(set(a[:5]) & set(e[:5])) / max(1, len(e[:5])) for a, e in pairs), 4
        ),
        "exact_top10_held": round(
            statistics.mean(len(set(a) & set(e)) / max(1, len(e)) for a, e in pairs), 4
        ),
        "answered_alike": sum(a == e for a, e in pairs),
    }


def _kept(found: list[tuple[int, float]], exact: list[tuple[int, float]]) -> float:
    """The share of the exact top list's positions where the budgeted list has the same score
    (rows of equal score may differ: FTS5 itself orders them only by rowid)."""
    if not exact:
        return 1.0
    same = sum(a[1] == b[1] for a, b in zip(found, exact, strict=False))
    return same / len(exact)


def other_questions(conn, questions: list[str], count: int) -> dict[str, list[str]]:
    """Questions the conversations do not ask, of two shapes a real owner asks: a name no row
    holds in place of each name ("When did Zorvek go ..."), and common words alone ("What did we
    say about the weather and the walk?"), drawn from the home's 200 commonest words that are
    not stopwords (every word's list far over any budget)."""
    rng = random.Random(11)
    letters = "bcdfghjklmnprstvz"

    def unseen() -> str:
        return "".join(rng.choice(letters) + rng.choice("aeiou") for _ in range(3)).title()

    renamed = []
    for text in rng.sample(questions, min(count, len(questions))):
        words = text.split()
        renamed.append(
            " ".join(
                [
                    words[0],
                    *(unseen() if w[:1].isupper() and w[1:].islower() else w for w in words[1:]),
                ]
            )
        )
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.spec_vocab USING fts5vocab(main, hits, row)"
    )
    common = [
        term
        for (term,) in conn.execute("SELECT term FROM temp.spec_vocab ORDER BY doc DESC LIMIT 400")
        if term.isalpha() and term not in stopwords.stopwords()
    ][:200]
    shapes = (
        "What did we say about the {} and the {}?",
        "How was the {} {} this {}?",
        "Did I tell you about my {} {} and the {} {}?",
        "{} {} {}",
    )
    plain = []
    for n in range(count):
        shape = shapes[n % len(shapes)]
        plain.append(shape.format(*rng.sample(common, shape.count("{}"))))
    return {"unseen_names": renamed, "common_words": plain}


def measure(home_root: str, queries_file: str, count: int) -> None:
    home = Home(Path(home_root))
    questions = json.loads(Path(queries_file).read_text())[:count]
    index = _open(home)
    _remove_written(index)
    matrix = index.live.matrix
    started = time.perf_counter()
    # As memoryd does once its catch-up is done (a checkout from before counts as recall goes).
    warm = getattr(index, "warm_counts", None)
    if warm is not None:
        warm()
    warm_s = time.perf_counter() - started
    started = time.perf_counter()
    recall_on(index, questions[0], k=10, session="mm-warm")  # loads the matrix, starts the ANN
    while matrix.ann is not None and not matrix.ann.ready():
        time.sleep(0.5)
    ann_s = time.perf_counter() - started
    for q in questions[:20]:
        recall_on(index, q, k=10, session="mm-warm")
    times = []
    answers = []
    for q in questions:
        t0 = time.perf_counter()
        found = recall_on(index, q, k=10, session="mm-bench")
        times.append((time.perf_counter() - t0) * 1000)
        answers.append([(hit.session, hit.record) for hit in found.hits])
    times.sort()
    out = {
        "ann_rows": matrix.ann.rows() if matrix.ann else 0,
        "ann_build_s": round(ann_s, 1),
        "common_terms_counted_s": round(warm_s, 1),
        "p50_ms": round(statistics.median(times), 1),
        "p99_ms": round(times[int(0.99 * (len(times) - 1))], 1),
    }
    out.update(_status())
    if getattr(hybrid, "READ_BUDGET", None) is not None:
        out.update(_against_exact(index, questions, answers))
    import sqlite3

    conn = sqlite3.connect(f"file:{home.index_db}?mode=ro", uri=True)
    others = other_questions(conn, questions, OTHER_QUESTIONS)
    conn.close()
    for shape, texts in others.items():
        took = []
        for q in texts:
            t0 = time.perf_counter()
            recall_on(index, q, k=10, session="mm-other")
            took.append((time.perf_counter() - t0) * 1000)
        took.sort()
        out[f"{shape}_p50_ms"] = round(statistics.median(took), 1)
        out[f"{shape}_p99_ms"] = round(took[int(0.99 * (len(took) - 1))], 1)
        out[f"{shape}_max_ms"] = round(took[-1], 1)
    parts: dict[str, list[float]] = {"embed_q": [], "ann": [], "around": []}
    lexical: list[float] = []
    spec: list[float] = []
    conn = index._take()
    approximate, query_vectors = [], []
    # The budget hybrid ranks within (a checkout from before it has none: the exact answer).
    budget = getattr(hybrid, "READ_BUDGET", None)
    within = () if budget is None else (budget,)
    kept: dict[str, list[float]] = {"lexical": [], "spec": []}
    for text in questions:
        t = time.perf_counter()
        terms = context.query_terms(Query.parse(text))
        conn.execute("BEGIN")
        found = context.ranked(conn, terms, hybrid.LEXICAL_DEPTH, *within)
        if found:
            index.live.counts.bound(conn, terms)
        conn.execute("COMMIT")
        lexical.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        conn.execute("BEGIN")
        context.spec_ranked(conn, Query.parse(text), context.SPEC_DEPTH, *within)
        conn.execute("COMMIT")
        spec.append((time.perf_counter() - t) * 1000)
        if budget is not None:  # the budgeted lists against the exact ones
            query = Query.parse(text)
            conn.execute("BEGIN")
            exact = context.ranked(conn, terms, hybrid.LEXICAL_DEPTH)
            kept["lexical"].append(_kept(found[:10], exact[:10]))
            spec_args = (conn, query.terms, query.expression, context.SPEC_DEPTH)
            exact_spec = maxscore.spec_ranked(*spec_args)
            kept["spec"].append(_kept(maxscore.spec_ranked(*spec_args, budget), exact_spec))
            conn.execute("COMMIT")
        t0 = time.perf_counter()
        q = index.live.embedder.embed([text])[0]
        t1 = time.perf_counter()
        candidates = matrix.ann.search(q, vectors.CANDIDATES)
        t2 = time.perf_counter()
        snap = vectors.around(conn, candidates, q)
        t3 = time.perf_counter()
        for name, took in zip(parts, (t1 - t0, t2 - t1, t3 - t2), strict=True):
            parts[name].append(took * 1000)
        query_vectors.append(q)
        cosine = snap.vectors @ q
        approximate.append({int(snap.rowids[i]) for i in np.argsort(-cosine)[:10]})
    index._give(conn)
    for name, shares in kept.items():
        if shares:
            out[f"{name}_exact_scores_at_10"] = round(statistics.mean(shares), 4)
            out[f"{name}_all_exact_at_10"] = sum(share == 1.0 for share in shares)
    parts["dense"] = [sum(t) for t in zip(*parts.values(), strict=True)]
    parts["lexical"] = lexical
    parts["spec"] = spec
    for name, took in parts.items():
        took.sort()
        out[f"{name}_p50_ms"] = round(statistics.median(took), 1)
        out[f"{name}_p99_ms"] = round(took[int(0.99 * (len(took) - 1))], 1)
    out.update(_written_between(index, questions[:WRITTEN_BETWEEN]))
    query_vectors = np.stack(query_vectors)
    index.close()
    exact = _exact_top(home, query_vectors)
    found = [len(a & e) / 10 for a, e in zip(approximate, exact, strict=True)]
    out["ann_recall_at_10"] = round(statistics.mean(found), 4)
    out["ann_recall_at_10_min"] = min(found)
    files = list(home.index_dir.glob("memory.sqlite3*"))
    out["index_mb"] = round(sum(f.stat().st_size for f in files) / 2**20, 1)
    print(json.dumps(out), flush=True)


def _written_between(index: Index, questions: list[str]) -> dict[str, float]:
    """p50 and p99 of recalls each made after a turn written and indexed; the turns (which share
    no word with the questions but stopwords) are deleted after, so the home is what it was."""
    log = index.home.session_log(WRITTEN_SESSION)
    log.parent.mkdir(parents=True, exist_ok=True)
    took = []
    for n, question in enumerate(questions):
        turn = UserRecord(time="2026-11-30T09:00:00Z", content=f"{n} {WRITTEN_TURN}")
        append_session_record(log, turn)
        index.catch_up_session(WRITTEN_SESSION)
        t0 = time.perf_counter()
        recall_on(index, question, k=10, session="mm-written")
        took.append((time.perf_counter() - t0) * 1000)
    _remove_written(index)
    took.sort()
    return {
        "written_between_p50_ms": round(statistics.median(took), 1),
        "written_between_p99_ms": round(took[int(0.99 * (len(took) - 1))], 1),
    }


def _remove_written(index: Index) -> None:
    """The turns _written_between wrote, gone from the index (their log written anew, empty: the
    indexer deletes its rows) and from the home (a run stopped half way leaves them for the next
    to remove)."""
    log = index.home.session_log(WRITTEN_SESSION)
    if log.exists():
        log.write_bytes(b"")
        index.catch_up_session(WRITTEN_SESSION)
        log.unlink()
        log.parent.rmdir()


def fit_model(convs, path: Path) -> None:
    """Mean and a basis of the real model's vectors of SAMPLE_TEXTS turns (see the docstring)."""
    turns = [t for c in convs for s in c.sessions for _, t in s.turns]
    texts = random.Random(3).sample(turns, min(SAMPLE_TEXTS, len(turns)))
    found = np.concatenate(
        [embed.shared().embed(texts[i : i + 32]) for i in range(0, len(texts), 32)]
    )
    mean = found.mean(axis=0)
    _, s, vt = np.linalg.svd(found - mean, full_matrices=False)
    basis = (s[:, None] * vt) / np.sqrt(len(found) - 1)  # x = mean + z @ basis, z ~ N(0, I)
    np.savez(path, mean=mean.astype(np.float32), basis=basis.astype(np.float32))


def _child(*args: str, path: str | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": path} if path else dict(os.environ)
    run = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, env=env)
    if run.returncode:
        sys.exit(run.stderr[-3000:])
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    b = sub.add_parser("build")
    b.add_argument("home")
    b.add_argument("model")
    m = sub.add_parser("measure")
    m.add_argument("home")
    m.add_argument("queries")
    m.add_argument("count", type=int)
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--against", help="another checkout, measured alternated with this one")
    parser.add_argument("--rounds", type=int, default=2, help="measures of each, with --against")
    parser.add_argument("--keep", help="a folder for the home, kept and used again")
    args = parser.parse_args()
    if args.command == "build":
        build(args.home, args.model)
        return
    if args.command == "measure":
        measure(args.home, args.queries, args.count)
        return
    if args.keep:
        run(Path(args.keep), args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        run(Path(tmp), args)


def run(folder: Path, args: argparse.Namespace) -> None:
    """Build the home in folder (unless a kept one of this size is there) and measure it."""
    home = Home(folder / "home")
    queries = folder / "queries.json"
    built = folder / f"built-{args.size}"
    if not built.exists():
        convs, turns, seed = [], 0, 1000
        while turns < args.size:
            convs.append(conversation(seed))
            turns += sum(len(s.turns) for s in convs[-1].sessions)
            seed += 1
        write_home(home, convs)
        questions = [q.text for c in convs for q in c.questions]
        step = max(1, len(questions) // args.queries)
        queries.write_text(json.dumps(questions[::step]))
        model = folder / "model.npz"
        fit_model(convs, model)
        print(f"size {args.size}: {turns} turns in {len(convs)} conversations", flush=True)
        print("  build: " + json.dumps(_child("build", str(home.root), str(model))), flush=True)
        built.touch()
    variants: list[tuple[str, str | None]] = [("this", None)]
    if args.against:
        other = f"{args.against}/services:{args.against}/libs"
        variants = [("against", other), ("this", None)] * args.rounds
    for name, path in variants:
        measured = _child("measure", str(home.root), str(queries), str(args.queries), path=path)
        print(f"  measure {name}: " + json.dumps(measured), flush=True)


if __name__ == "__main__":
    main()
