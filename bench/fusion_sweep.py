"""How hybrid's fusion was chosen: lexical divisors and weights compared on conversations of other
seeds than the evaluation's.

    .venv/bin/python bench/fusion_sweep.py                  # seeds 101..110 (the dev set)
    .venv/bin/python bench/fusion_sweep.py --first-seed 1   # the evaluation's (report only)

For each conversation, a hybrid index (all vectors embedded); for each question, context's
lexical top 100 (rowid, bm25), the term counts the bound needs, and the dense scores hybrid
computes (cosine plus the best neighbour's at half weight) over every row. Then recall@5 and @10,
overall and per kind, of: context alone, dense alone, reciprocal rank fusion (k = 60), and the
weighted sum with the lexical part divided by the query's best row ("best", the issue's), by the
most the query could score ("bound", lexbound.py) or min-maxed over the list ("minmax"), at
lexical weights 0.5 to 0.9. The dense part is min-maxed over its top 100, as in hybrid.py.
"""

import argparse
import collections
import functools
import tempfile
from pathlib import Path

import numpy as np
from bench_recall_modes import KINDS, fresh_index, write_home
from recall_eval.conversations import conversation

from memoryd.home import Home
from memoryd.modes import context
from memoryd.modes.hybrid import DENSE_DEPTH, dense_scores
from memoryd.modes.lexbound import COUNT
from memoryd.search import bm25
from memoryd.search.query import Query


def collect(seeds: range) -> list[dict]:
    questions = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            conv = conversation(seed)
            home = Home(Path(tmp) / f"c{seed}")
            write_home(home, [conv])
            index = fresh_index(home, "hybrid")
            index.catch_up_all()
            if not index.drain_embeddings(3600):
                raise SystemExit("the embedder did not finish")
            conn = index._take()
            matrix = index._hybrid.matrix.refresh(conn)
            (rows,) = conn.execute("SELECT count(*) FROM context_hits").fetchone()
            key = {r[1:]: r[0] for r in conn.execute("SELECT rowid, session, record FROM sources")}
            for q in conv.questions:
                query = Query.parse(q.text)
                terms = context.query_terms(query)
                counts = [conn.execute(COUNT, (f'"{t}"',)).fetchone()[0] for t in terms]
                vector = index._hybrid.embedder.embed([q.text])[0]
                questions.append(
                    {
                        "kind": q.kind,
                        "lexical": context.ranked(conn, terms, 100),
                        "bound": sum(bm25.idf(rows, n) for n in counts) * bm25.PHRASE_BOUND,
                        "rowids": matrix.rowids.copy(),
                        "dense": dense_scores(matrix, vector),
                        "answers": {key[a] for a in q.answers if a in key},
                    }
                )
            index._give(conn)
            index.close()
    return questions


def dense_top(q: dict) -> dict[int, float]:
    scores = q["dense"]
    top = np.argpartition(-scores, DENSE_DEPTH - 1)[:DENSE_DEPTH]
    high, low = float(scores[top].max()), float(scores[top].min())
    return {int(q["rowids"][p]): (float(scores[p]) - low) / (high - low or 1.0) for p in top}


def weighted(q: dict, divisor: str, lexical_weight: float) -> list[int]:
    combined: dict[int, float] = {}
    lexical = [(rowid, -score) for rowid, score in q["lexical"]]
    if lexical:
        best, worst = lexical[0][1], lexical[-1][1]
        for rowid, score in lexical:
            if divisor == "best":
                part = score / best
            elif divisor == "bound":
                part = score / max(q["bound"], best)
            else:
                part = (score - worst) / (best - worst or 1.0)
            combined[rowid] = lexical_weight * part
    for rowid, part in dense_top(q).items():
        combined[rowid] = combined.get(rowid, 0.0) + (1 - lexical_weight) * part
    return sorted(combined, key=lambda rowid: (-combined[rowid], rowid))


def rrf(q: dict) -> list[int]:
    combined: dict[int, float] = collections.defaultdict(float)
    for position, (rowid, _) in enumerate(q["lexical"]):
        combined[rowid] += 1 / (61 + position)
    for position, p in enumerate(np.argsort(-q["dense"])[:DENSE_DEPTH]):
        combined[int(q["rowids"][p])] += 1 / (61 + position)
    return sorted(combined, key=lambda rowid: (-combined[rowid], rowid))


def row(name: str, questions: list[dict], ranker) -> str:
    found = collections.defaultdict(lambda: [0, 0, 0])
    for q in questions:
        ranked = ranker(q)
        for key in (q["kind"], "all"):
            found[key][0] += any(r in q["answers"] for r in ranked[:5])
            found[key][1] += any(r in q["answers"] for r in ranked[:10])
            found[key][2] += 1
    cells = [
        f"{found[k][0] / found[k][2]:.3f} / {found[k][1] / found[k][2]:.3f}"
        for k in ("all", *KINDS)
    ]
    return f"| {name} | " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first-seed", type=int, default=101)
    parser.add_argument("--conversations", type=int, default=10)
    args = parser.parse_args()
    seeds = range(args.first_seed, args.first_seed + args.conversations)
    questions = collect(seeds)
    print(f"seeds {seeds.start}..{seeds.stop - 1}: {len(questions)} questions")
    print("| ranking | all @5 / @10 | " + " | ".join(f"{k} @5 / @10" for k in KINDS) + " |")
    print("| --- " * (2 + len(KINDS)) + "|")
    print(row("context", questions, lambda q: [rowid for rowid, _ in q["lexical"]]))
    print(row("dense", questions, lambda q: [int(q["rowids"][p]) for p in np.argsort(-q["dense"])]))
    print(row("rrf", questions, rrf))
    for divisor in ("best", "minmax", "bound"):
        for weight in (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9):
            ranker = functools.partial(weighted, divisor=divisor, lexical_weight=weight)
            print(row(f"{divisor} {weight}", questions, ranker))


if __name__ == "__main__":
    main()
