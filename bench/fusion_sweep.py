"""How the context and hybrid rankings were chosen: fusions compared on conversations of every
shape (recall_eval/shapes.py), on seeds the evaluation does not use.

    .venv/bin/python bench/fusion_sweep.py                       # dev: seeds 101.., 6 of each shape
    .venv/bin/python bench/fusion_sweep.py --first-seed 1 --conversations 10   # the evaluation's

For each conversation, one hybrid index (all vectors embedded); for each question, the spec's
ranking (its bm25 query, top SPEC_DEPTH), context's lexical top 100 (rowid, bm25) and the most
the query could score (lexbound.py), and the dense scores (cosine plus half the best
neighbour's) of the question as typed and without its common names (names.py). Then, for each
ranking in the grid, recall at 5 and 10 ("any": one answer found; "all": every answer found),
per shape and kind, and the worst margin against the spec's over every shape and kind.

A ranking: lexical (context's bm25 over the best row's, or over the bound; `lexical` is context's
query without stopwords, `lexical_all` with them, `_n2`/`_n0` with the neighbour column at 0.2 and
0) x wl + the spec's rank r as 5 / (5 + r) x ws + dense min-maxed over its top 100 x wd, then the
agent's own calls last, each pick damping its session run (damp 1.0 = off) and the spec's best
rows kept at the positions of keep or better (arrange.py). --cache keeps the collected questions
in a pickle, so the grid can be run again without the embedding.
"""

import argparse
import collections
import itertools
import pickle
import sys
import tempfile
from pathlib import Path

import numpy as np
from bench_recall_modes import fresh_index, write_home
from recall_eval.shapes import KINDS, SHAPES, Tally, conversation

from memoryd.home import Home
from memoryd.modes import arrange, context, names
from memoryd.modes.hybrid import DENSE_DEPTH, dense_scores
from memoryd.search.query import Query, terms_expression

SPEC_DEPTH = 50
LEXICALS = ("lexical", "lexical_all", "lexical_n2", "lexical_n0")
# context's lexical query at another weight of the neighbour column.
LEXICAL = (
    "SELECT rowid, bm25(context_hits, 1.0, {}, 1.0) AS score FROM context_hits"
    " WHERE context_hits MATCH ? ORDER BY score LIMIT ?"
)
SPEC = "SELECT rowid, bm25(hits) FROM hits WHERE hits MATCH ? ORDER BY rank LIMIT ?"


def _top(rowids: np.ndarray, scores: np.ndarray) -> dict[int, float]:
    depth = min(DENSE_DEPTH, len(scores))
    top = np.argpartition(-scores, depth - 1)[:depth]
    return {int(rowids[p]): float(scores[p]) for p in top}


def collect(shape: str, seeds: range) -> list[dict]:
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            conv = conversation(shape, seed)
            home = Home(Path(tmp) / f"c{seed}")
            write_home(home, [conv])
            index = fresh_index(home, "hybrid")
            index.catch_up_all()
            if not index.drain_embeddings(3600):
                raise SystemExit("the embedder did not finish")
            live = index.live
            conn = index._take()
            matrix = live.matrix.refresh(conn)
            rows = conn.execute("SELECT rowid, session, record, role FROM sources").fetchall()
            where = arrange.places(conn, [r[0] for r in rows])
            key = {(s, rec): rowid for rowid, s, rec, role in rows if role != "call"}
            for q in conv.questions:
                query = Query.parse(q.text)
                terms = context.query_terms(query)
                stripped = names.dense_text(conn, live.counts, q.text)
                raw_vector, bare_vector = live.embedder.embed([q.text, stripped])
                out.append(
                    {
                        "shape": shape,
                        "question": q,
                        "where": where,
                        "key": key,
                        "stripped": stripped,
                        "spec": conn.execute(SPEC, (query.expression, SPEC_DEPTH)).fetchall(),
                        "lexical": context.ranked(conn, terms, 100),
                        **{
                            name: conn.execute(
                                LEXICAL.format(near), (terms_expression(words), 100)
                            ).fetchall()
                            for name, near, words in (
                                ("lexical_all", 0.4, list(query.terms)),
                                ("lexical_n2", 0.2, terms),
                                ("lexical_n0", 0.0, terms),
                            )
                        },
                        "bound": live.counts.bound(conn, terms),
                        "raw": _top(matrix.rowids, dense_scores(matrix, raw_vector)),
                        "bare": _top(matrix.rowids, dense_scores(matrix, bare_vector)),
                    }
                )
            index._give(conn)
            index.close()
            print(f"  {shape} seed {seed}: {len(conv.questions)} questions", file=sys.stderr)
    return out


def scores_of(q: dict, p: dict) -> dict[int, float]:
    combined: dict[int, float] = collections.defaultdict(float)
    lexical = q[p.get("lexical", "lexical")]
    if lexical and p["wl"]:
        best = -lexical[0][1]
        scale = max(q["bound"], best) if p["divisor"] == "bound" else best
        for rowid, score in lexical:
            combined[rowid] += p["wl"] * (-score / (scale or 1.0))
    spec = q["spec"]
    if spec and p["ws"]:
        best = -spec[0][1] or 1.0
        c = p.get("spec_rank")
        for rank, (rowid, score) in enumerate(spec[: p.get("spec_depth", SPEC_DEPTH)]):
            part = c / (c + rank) if c else -score / best
            combined[rowid] += p["ws"] * part
    dense = q[p["dense"]] if p["wd"] else {}
    if dense:
        high, low = max(dense.values()), min(dense.values())
        for rowid, score in dense.items():
            combined[rowid] += p["wd"] * (score - low) / (high - low or 1.0)
    return combined


def ranked(q: dict, p: dict) -> list[tuple[str, int]]:
    if p.get("spec_only"):
        order = [rowid for rowid, _ in q["spec"]]
    else:
        order = arrange.arrange(scores_of(q, p), q["where"], 10, p["damp"], arrange.RUN)
        if p.get("deadlines"):
            spec = [rowid for rowid, _ in q["spec"]]
            order = arrange.keep_spec(order, spec, q["where"], p["deadlines"], 10)
        if not p["own_last"]:
            scores = scores_of(q, p)
            order = sorted(scores, key=lambda r: (-scores[r], r))[:10]
    back = {rowid: (s, rec) for (s, rec), rowid in q["key"].items()}
    return [back.get(r, ("", -1)) for r in order[:10]]


def evaluate(questions: list[dict], p: dict) -> dict[str, Tally]:
    tallies = {shape: Tally() for shape in SHAPES}
    for q in questions:
        tallies[q["shape"]].add(q["question"], ranked(q, p))
    return tallies


KEEP = (2, 4, 7, 9)


def _context(lexical: str, ws: float, keep: tuple, damp: float) -> dict:
    return {
        "divisor": "best",
        "lexical": lexical,
        "dense": "raw",
        "wl": round(1 - ws, 2),
        "ws": ws,
        "wd": 0.0,
        "damp": damp,
        "own_last": True,
        "spec_rank": 5.0,
        "spec_depth": 20,
        "deadlines": keep,
    }


def _hybrid(divisor: str, weights: tuple, keep: tuple, damp: float, dense: str = "bare") -> dict:
    wl, ws, wd = weights
    p = _context("lexical", ws, keep, damp)
    p.update({"divisor": divisor, "dense": dense, "wl": wl, "wd": wd})
    return p


def grid() -> list[tuple[str, dict]]:
    """spec, the modes as they were, and the variants compared (the chosen ones are marked)."""
    out: list[tuple[str, dict]] = [("spec", {"spec_only": True})]
    was = {**_context("lexical", 0.0, (), 1.0), "own_last": False}
    out.append(("context as it was (own calls ranked with the rest)", was))
    out.append(
        (
            "hybrid as it was (bound, as typed, 0.8/0/0.2)",
            _hybrid("bound", (0.8, 0, 0.2), (), 1.0, "raw"),
        )
    )
    for lexical, ws, keep, damp in itertools.product(
        LEXICALS, (0.0, 0.15, 0.25, 0.4), ((), (4, 9), KEEP), (1.0, 0.9, 0.8)
    ):
        chosen = ""  # the chosen one keeps one more of the spec's rows: below
        name = f"context {lexical} ws={ws} keep={keep} damp={damp}{chosen}"
        out.append((name, _context(lexical, ws, keep, damp)))
    weights = ((0.6, 0.0, 0.4), (0.7, 0.0, 0.3), (0.45, 0.15, 0.4), (0.5, 0.2, 0.3))
    weights += ((0.3, 0.3, 0.4), (0.4, 0.3, 0.3), (0.5, 0.1, 0.4))
    for divisor, dense, w, keep, damp in itertools.product(
        ("best", "bound"), ("raw", "bare"), weights, ((), (4, 9), KEEP), (1.0, 0.9)
    ):
        chosen = (divisor, dense, w, keep, damp) == ("bound", "bare", (0.45, 0.15, 0.4), KEEP, 0.9)
        name = f"hybrid {divisor} {dense} {w[0]}/{w[1]}/{w[2]} keep={keep} damp={damp}"
        out.append((name + (" (chosen)" if chosen else ""), _hybrid(divisor, w, keep, damp, dense)))
    for keep in ((2, 4, 7, 9, 10), (2, 4, 6, 8, 9, 10)):
        name = f"context lexical ws=0.15 keep={keep} damp=0.9"
        out.append(
            (name + (" (chosen)" if len(keep) == 5 else ""), _context("lexical", 0.15, keep, 0.9))
        )
    for dense in ("raw", "bare"):
        out.append((f"dense alone {dense}", _hybrid("best", (0.0, 0.0, 1.0), (), 1.0, dense)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first-seed", type=int, default=101)
    parser.add_argument("--conversations", type=int, default=6)
    parser.add_argument("--shapes", type=lambda s: s.split(","), default=list(SHAPES))
    parser.add_argument("--cache", help="pickle of the collected questions (kept between runs)")
    parser.add_argument("--show", type=int, default=8, help="rankings printed per mode, best first")
    parser.add_argument("--detail", action="append", default=[], help="a ranking to show per kind")
    args = parser.parse_args()
    cache = Path(args.cache) if args.cache else None
    if cache is not None and cache.exists():
        questions = pickle.loads(cache.read_bytes())
    else:
        seeds = range(args.first_seed, args.first_seed + args.conversations)
        questions = [q for shape in args.shapes for q in collect(shape, seeds)]
        if cache is not None:
            cache.write_bytes(pickle.dumps(questions))
    shapes = sorted({q["shape"] for q in questions}, key=SHAPES.index)
    results = [(name, evaluate(questions, p)) for name, p in grid()]
    spec = results[0][1]

    def margin(t: dict[str, Tally]) -> float:
        worst = 1.0
        for shape in shapes:
            for kind in ("all", *KINDS[shape]):
                if t[shape].n(kind):
                    for slot in (0, 1):
                        worst = min(worst, t[shape].rate(kind, slot) - spec[shape].rate(kind, slot))
        return worst

    def mean(t: dict[str, Tally], slot: int) -> float:
        return sum(t[s].rate("all", slot) for s in shapes) / len(shapes)

    print(f"{len(questions)} questions: " + ", ".join(f"{s} {spec[s].n('all')}" for s in shapes))
    print(
        "| ranking | "
        + " | ".join(f"{s} any@5 / @10 / all@5 / sessions@5" for s in shapes)
        + " | mean any@5 | worst margin vs spec |"
    )
    print("| --- " * (3 + len(shapes)) + "|")
    shown = [results[0]]
    for family in ("context", "hybrid"):
        mine = [r for r in results if r[0].startswith(family)]
        shown += sorted(mine, key=lambda r: -(mean(r[1], 0) + mean(r[1], 2)))[: args.show]
    shown += [r for r in results if "alone" in r[0] or "as it was" in r[0] or "chosen" in r[0]]
    for name, t in shown:
        cells = [
            f"{t[s].rate('all', 0):.3f} / {t[s].rate('all', 1):.3f} / {t[s].rate('all', 2):.3f}"
            f" / {t[s].rate('all', 4):.2f}"
            for s in shapes
        ]
        print(f"| {name} | " + " | ".join(cells) + f" | {mean(t, 0):.3f} | {margin(t):+.3f} |")
    by_name = dict(results)
    for name in args.detail:
        detail(name, by_name[name], spec, shapes)


def detail(name: str, t: dict[str, Tally], spec: dict[str, Tally], shapes: list[str]) -> None:
    """One ranking per shape and kind: any@5 / any@10 / all@5 (spec's in brackets)."""
    print(f"\n{name}: any@5 / any@10 / all@5 per kind (spec's in brackets)")
    for shape in shapes:
        cells = []
        for kind in ("all", *KINDS[shape]):
            if t[shape].n(kind):
                mine = "/".join(f"{t[shape].rate(kind, slot):.2f}" for slot in (0, 1, 2))
                theirs = "/".join(f"{spec[shape].rate(kind, slot):.2f}" for slot in (0, 1, 2))
                cells.append(f"{kind} {mine} [{theirs}] n={t[shape].n(kind)}")
        print(f"  {shape}: " + "; ".join(cells))


if __name__ == "__main__":
    main()
