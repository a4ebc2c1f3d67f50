"""How the context and hybrid rankings were chosen: fusions compared on conversations of every
generated shape (recall_eval/shapes.py), on seeds the evaluation does not use, and on the public
benchmarks' own files when given (recall_eval/public.py).

    .venv/bin/python bench/fusion_sweep.py --cache /tmp/dev.pkl   # dev: seeds 101..106, each shape
    .venv/bin/python bench/fusion_sweep.py --locomo locomo10.json --limit 2 --cache /tmp/dev.pkl
    .venv/bin/python bench/fusion_sweep.py --first-seed 1 --conversations 10   # the evaluation's

For each conversation, one hybrid index (all vectors built before any question); for each
question, the spec's ranking (its bm25 query, top SPEC_DEPTH), context's lexical top 100 (rowid,
bm25) with the query's words less stopwords, and variants (every word; the first person kept;
common names removed; the neighbour column at other weights), the most each query could score
(lexbound.py), and the dense scores (cosine plus half the best neighbour's, or the cosine alone)
of the question as typed and without its common names (names.py). Then, for each ranking in the
grid, recall at 5 and 10 ("any": one answer found; "all": every answer found), per shape and
kind, and the worst margin against the spec's over every shape and kind.

A ranking: lexical bm25 over the best row's or over the bound, x wl; + the spec's rank r (of its
first `depth`) as 5 / (5 + r) x ws; + dense (names removed) over its best score or min-maxed over
its top 100, x wd (or, with `rrf` c, each part's rank r as weight / (c + r)); then the agent's
own calls last, the rows of the speaker a question names raised by `favour` of their score
(addressed.py; favour 0 = off), or when it names none, those of the role its grammatical
person asks about by `person` (person.py; 0 = off), each pick damping its session run by damp
past its first `free` picks (damp 1.0 = off), and the spec's best rows kept at the positions of
keep or better (arrange.py), all of them (no `sure`) or, by a rule, those the spec is sure of:
`gap` g, a row scoring g times the spec's next; `crowd` g, g times the spec's last row read; the
others not kept, or, with `-late`, kept at the end of the deadlines.

The choice (choose()): every cell (shape, kind or all, @5 and @10) at least 1 standard error of
the paired difference above minus the spec's, or as close as any ranking of the mode comes; among
those, the rankings whose worst shape's any@5 gain is within one standard error of the best
worst shape's, and of them the highest mean any@5 gain over the shapes. --cache keeps the
collected questions in a pickle, so the grid can be run again without the embedding.
"""

import argparse
import collections
import itertools
import pickle
import sys
import tempfile
from pathlib import Path

import numpy as np
from bench_recall_modes import _fill_vectors, fresh_index, write_home
from recall_eval import public, written
from recall_eval.conversations import Conversation
from recall_eval.shapes import KINDS, SHAPES, Tally, conversation

from memoryd.home import Home
from memoryd.modes import addressed, arrange, context, names, person
from memoryd.modes.hybrid import DENSE_DEPTH, dense_scores
from memoryd.modes.stopwords import stopwords
from memoryd.search.query import Query, terms_expression

SPEC_DEPTH = 50
LEXICALS = ("lexical", "lexical_all", "lexical_n2", "lexical_n0")
# context's lexical query at another weight of the neighbour column.
LEXICAL = (
    "SELECT rowid, bm25(context_hits, 1.0, {}, 1.0) AS score FROM context_hits"
    " WHERE context_hits MATCH ? ORDER BY score LIMIT ?"
)
SPEC = "SELECT rowid, bm25(hits) FROM hits WHERE hits MATCH ? ORDER BY rank LIMIT ?"


SELF = frozenset({"i", "me", "my", "mine", "myself"})


def _with_self(terms) -> list[str]:
    """The terms less stopwords, the first person kept."""
    words = stopwords()
    return [t for t in terms if t.lower() not in words or t.lower() in SELF] or list(terms)


def _top(rowids: np.ndarray, scores: np.ndarray) -> dict[int, float]:
    depth = min(DENSE_DEPTH, len(scores))
    top = np.argpartition(-scores, depth - 1)[:depth]
    return {int(rowids[p]): float(scores[p]) for p in top}


def collect(shape: str, convs: list[Conversation]) -> list[dict]:
    out = []
    vectors: dict[str, bytes] = {}  # text -> vector, across conversations (haystacks repeat)
    with tempfile.TemporaryDirectory() as tmp:
        for seed, conv in enumerate(convs):
            home = Home(Path(tmp) / f"c{seed}")
            write_home(home, [conv])
            index = fresh_index(home, "hybrid")
            index.catch_up_all()
            index.live.stop_embedder()  # every vector built before any question
            _fill_vectors(index, vectors)
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
                bare_terms = context.query_terms(Query.parse(stripped))
                raw_vector, bare_vector = live.embedder.embed([q.text, stripped])
                out.append(
                    {
                        "shape": shape,
                        "question": q,
                        "where": where,
                        "key": key,
                        "stripped": stripped,
                        "named": addressed.named_role(conn, q.text),
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
                                ("lexical_me", 0.4, _with_self(query.terms)),
                            )
                        },
                        "lexical_bare": context.ranked(conn, bare_terms, 100),
                        "bound_bare": live.counts.bound(conn, bare_terms),
                        "bound_me": live.counts.bound(conn, _with_self(query.terms)),
                        "bound": live.counts.bound(conn, terms),
                        "raw": _top(matrix.rowids, dense_scores(matrix, raw_vector)),
                        "bare": _top(matrix.rowids, dense_scores(matrix, bare_vector)),
                        "bare_n0": _top(matrix.rowids, matrix.vectors @ bare_vector),
                    }
                )
            index._give(conn)
            index.close()
            print(f"  {shape} {seed}: {len(conv.questions)} questions", file=sys.stderr)
    return out


def scores_of(q: dict, p: dict) -> dict[int, float]:
    if p.get("rrf"):
        return _rrf(q, p)
    combined: dict[int, float] = collections.defaultdict(float)
    lexical = q[p.get("lexical", "lexical")]
    if lexical and p["wl"]:
        best = -lexical[0][1]
        bound = {"lexical_bare": q["bound_bare"], "lexical_me": q.get("bound_me")}.get(
            p.get("lexical", "lexical"), q["bound"]
        )
        scale = max(bound, best) if p["divisor"] == "bound" else best
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
        if p.get("dense_norm") == "best":
            low = 0.0
        for rowid, score in dense.items():
            combined[rowid] += p["wd"] * (score - low) / (high - low or 1.0)
    return combined


def _rrf(q: dict, p: dict) -> dict[int, float]:
    """Reciprocal rank fusion: each part's rank r adds weight / (c + r)."""
    c = p["rrf"]
    combined: dict[int, float] = collections.defaultdict(float)
    dense = q[p["dense"]] if p["wd"] else {}
    parts = (
        (p["wl"], [rowid for rowid, _ in q[p.get("lexical", "lexical")]]),
        (p["ws"], [rowid for rowid, _ in q["spec"][: p.get("spec_depth", SPEC_DEPTH)]]),
        (p["wd"], sorted(dense, key=lambda r: -dense[r])),
    )
    for weight, order in parts:
        if weight:
            for rank, rowid in enumerate(order):
                combined[rowid] += weight / (c + rank)
    return combined


def sure_rows(q: dict, rule: tuple | None, depth: int) -> set[int] | None:
    """The spec's rows its rule is sure of (None: every row): ("gap", g) a row scoring g times
    the spec's next row; ("crowd", g) a row scoring g times the last row read (depth)."""
    if rule is None:
        return None
    spec = [(rowid, -score) for rowid, score in q["spec"][:depth]]
    name, g = rule[0].removesuffix("-late"), rule[1]
    sure = set()
    for i, (rowid, score) in enumerate(spec):
        if name == "gap":
            other = spec[i + 1][1] if i + 1 < len(spec) else 0.0
        else:
            other = spec[-1][1] if len(spec) == depth else 0.0
        if score >= g * other and score > other:
            sure.add(rowid)
    return sure


def ranked(q: dict, p: dict, cache: dict | None = None) -> list[int]:
    """The ranking's first 10 rowids for one question (cache: arrangements already made)."""
    if p.get("spec_only"):
        return [rowid for rowid, _ in q["spec"][:10]]
    if not p["own_last"]:
        scores = scores_of(q, p)
        return sorted(scores, key=lambda r: (-scores[r], r))[:10]
    key = tuple(sorted((n, v) for n, v in p.items() if n not in ("deadlines", "rule")))
    order = None if cache is None else cache.get(key)
    if order is None:
        damp, free = p["damp"], p.get("free", 0)
        scores = scores_of(q, p)
        if p.get("favour") and q.get("named"):
            addressed.favour(scores, q["where"], q["named"], p["favour"])
        elif p.get("person"):
            role = person.role(q["question"].text)
            if role is not None:
                addressed.favour(scores, q["where"], role, p["person"])
        order = arrange.arrange(scores, q["where"], 10, damp, arrange.RUN, free)
        if cache is not None:
            cache[key] = order
    if p.get("deadlines"):
        spec = [rowid for rowid, _ in q["spec"]][: p.get("spec_depth", SPEC_DEPTH)]
        sure = sure_rows(q, p.get("rule"), p.get("spec_depth", SPEC_DEPTH))
        late = p.get("rule") is not None and p["rule"][0].endswith("-late")
        order = arrange.keep_spec(order, spec, q["where"], p["deadlines"], 10, sure, late)
    return order


def places_of(q: dict, order: list[int]) -> list[tuple[str, int]]:
    if "back" not in q:
        q["back"] = {rowid: (s, rec) for (s, rec), rowid in q["key"].items()}
    return [q["back"].get(r, ("", -1)) for r in order[:10]]


def evaluate(questions: list[dict], p: dict, caches: list[dict] | None = None) -> dict[str, Tally]:
    tallies = {q["shape"]: Tally() for q in questions}
    for n, q in enumerate(questions):
        order = ranked(q, p, None if caches is None else caches[n])
        tallies[q["shape"]].add(q["question"], places_of(q, order))
    return tallies


def per_question(questions: list[dict], p: dict, caches: list[dict]) -> np.ndarray:
    """Per question: any@5, any@10, all@5, all@10, distinct sessions in the top 5."""
    out = np.zeros((len(questions), 5))
    for n, q in enumerate(questions):
        top = places_of(q, ranked(q, p, caches[n]))
        answers = set(q["question"].answers)
        for slot, k in ((0, 5), (1, 10)):
            out[n, slot] = bool(set(top[:k]) & answers)
            out[n, slot + 2] = answers <= set(top[:k])
        out[n, 4] = len({session for session, _ in top[:5]})
    return out


def _z(d: np.ndarray) -> float:
    """The mean of paired differences in standard errors (0 when none differs)."""
    se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else 0.0
    if se:
        return float(d.mean() / se)
    return 0.0 if d.mean() == 0 else float(np.sign(d.mean()) * np.inf)


def judge(questions: list[dict], mine: np.ndarray, spec: np.ndarray) -> dict:
    """The objective's parts: each shape's any@5 gain over the spec (and its standard error),
    and the margin over the spec in each cell (shape, kind or "all", @5 or @10) in standard
    errors of the paired difference."""
    shapes = list(dict.fromkeys(q["shape"] for q in questions))
    gains, ses, cells = {}, {}, {}
    for shape in shapes:
        rows = np.array([q["shape"] == shape for q in questions])
        d = mine[rows, 0] - spec[rows, 0]
        gains[shape], ses[shape] = float(d.mean()), float(d.std(ddof=1) / np.sqrt(len(d)))
        known = KINDS.get(shape, (*public.LOCOMO_KINDS.values(), *public.LONGMEM_KINDS))
        for kind in ("all", *known):
            sel = rows
            if kind != "all":
                sel = rows & np.array([q["question"].kind == kind for q in questions])
            if not sel.any():
                continue
            for slot in (0, 1):
                d = mine[sel, slot] - spec[sel, slot]
                cells[f"{shape} {kind} @{(5, 10)[slot]} {d.mean():+.3f}"[:-7]] = (_z(d), d.mean())
    return {"gains": gains, "ses": ses, "cells": cells}


def choose(judged: dict[str, dict], names: list[str], max_z: float) -> list[str]:
    """names within the constraint, best first.

    The constraint: in every cell, a margin over the spec of at least max_z standard errors,
    or, in a cell where no ranking of names reaches that, at least the best margin any reaches
    (a loss no arrangement avoids is the generator's, not the ranking's). Best: the highest
    mean any@5 gain over the shapes, among the rankings whose worst shape's gain is within one
    standard error of the highest worst shape's gain (so the choice does not rest on a few
    questions of one shape).
    """
    cells = judged[names[0]]["cells"]
    floor = {c: min(max_z, max(judged[n]["cells"][c][0] for n in names)) for c in cells}
    ok = [n for n in names if all(judged[n]["cells"][c][0] >= floor[c] for c in cells)]
    if not ok:
        return []

    def worst(n: str) -> tuple[float, float]:
        g = judged[n]["gains"]
        shape = min(g, key=g.get)
        return g[shape], judged[n]["ses"][shape]

    top, se = max(worst(n) for n in ok)
    near = [n for n in ok if worst(n)[0] >= top - se]
    return sorted(near, key=lambda n: -sum(judged[n]["gains"].values()))


def lowest(j: dict) -> str:
    cell = min(j["cells"], key=lambda c: j["cells"][c][0])
    z, margin = j["cells"][cell]
    return f"{z:+.2f} ({cell} {margin:+.3f})"


CONTEXT_KEEP = (2, 4, 7, 9, 10)
HYBRID_KEEP = (2, 4, 7, 9)
RULES = (None, ("gap", 1.25), ("crowd", 1.5), ("crowd", 2.0), ("crowd", 3.0))
RULES += (("crowd-late", 1.5), ("crowd-late", 2.0), ("crowd-late", 3.0), ("gap-late", 1.25))
KEEPS = ((), (2, 5), (2, 4, 7, 9), (2, 4, 7, 9, 10))


def _context(ws: float, depth: int, keep: tuple, rule, damp: float, free: int) -> dict:
    return {
        "divisor": "best",
        "lexical": "lexical",
        "dense": "raw",
        "wl": round(1 - ws, 2),
        "ws": ws,
        "wd": 0.0,
        "damp": damp,
        "free": free,
        "own_last": True,
        "spec_rank": 5.0,
        "spec_depth": depth,
        "deadlines": keep,
        "rule": rule,
        "favour": addressed.FAVOUR,
        "person": addressed.FAVOUR,
    }


def _hybrid(
    depth: int,
    keep: tuple,
    rule,
    damp: float,
    free: int,
    divisor: str = "bound",
    wl: float = 0.45,
    wd: float = 0.4,
    ws: float = 0.15,
    rrf: float = 0.0,
) -> dict:
    p = _context(ws, depth, keep, rule, damp, free)
    p.update({"divisor": divisor, "dense": "bare", "wl": wl, "wd": wd, "rrf": rrf})
    return p


def _name(family: str, p: dict) -> str:
    ws = f" ws={p['ws']}"
    if family == "hybrid":
        ws = f" {p['divisor']} wl={p['wl']} wd={p['wd']}{ws}" + (
            f" rrf={p['rrf']}" if p.get("rrf") else ""
        )
    ws += f" {p.get('lexical', 'lexical')}" + (
        f" dense/{p['dense_norm']}" if p.get("dense_norm") else ""
    )
    rule = "" if p["rule"] is None or not p["deadlines"] else f" sure={p['rule'][0]}{p['rule'][1]}"
    return (
        f"{family}{ws} depth={p['spec_depth']} keep={p['deadlines']}{rule}"
        f" damp={p['damp']} free={p['free']}"
    )


# context's lexical query: the question's words less stopwords, or less its common names too.
LEXICAL_QUERIES = ("lexical", "lexical_bare")
CHOSEN_CONTEXT = _context(0.15, 10, CONTEXT_KEEP, ("crowd-late", 2.0), 1.0, 0)
CHOSEN_HYBRID = {
    **_hybrid(10, HYBRID_KEEP, ("crowd-late", 2.0), 0.95, 0, "bound", 0.75, 0.25, 0.0),
    "dense_norm": "best",
}
# How much a question's named speaker's rows are raised (addressed.py), compared.
FAVOURS = (0.0, 0.2, 0.5, 0.75)
# How much the rows of the role a question's person asks about are raised (person.py), compared.
PERSONS = (0.0, 0.1, 0.2, 0.5)
# How hard a pick lowers its session run (arrange.py: damp, past `free` picks), compared.
DAMPS = ((0.9, 0), (0.8, 0), (0.7, 0), (0.5, 0), (0.8, 1), (0.5, 1), (0.25, 1))


def grid() -> list[tuple[str, dict]]:
    """spec, the modes as chosen before, and the variants compared."""
    out: list[tuple[str, dict]] = [("spec", {"spec_only": True})]
    out.append(("context as chosen", CHOSEN_CONTEXT))
    out.append(("hybrid as chosen", CHOSEN_HYBRID))
    out.append(("hybrid chosen before", _hybrid(10, HYBRID_KEEP, ("crowd-late", 2.0), 0.95, 0)))
    for favour in FAVOURS:
        out.append((f"context as chosen, favour={favour}", {**CHOSEN_CONTEXT, "favour": favour}))
        out.append((f"hybrid as chosen, favour={favour}", {**CHOSEN_HYBRID, "favour": favour}))
    for share in PERSONS:
        for family, chosen in (("context", CHOSEN_CONTEXT), ("hybrid", CHOSEN_HYBRID)):
            out.append((f"{family} as chosen, person={share}", {**chosen, "person": share}))
    for damp, free in DAMPS:
        for family, chosen in (("context", CHOSEN_CONTEXT), ("hybrid", CHOSEN_HYBRID)):
            p = {**chosen, "damp": damp, "free": free}
            out.append((f"{family} as chosen, damp={damp} free={free}", p))
    for lexical, ws, keep, rule, damp in itertools.product(
        LEXICAL_QUERIES, (0.0, 0.15, 0.3), KEEPS, RULES, (1.0, 0.95)
    ):
        if not keep and rule:
            continue
        p = _context(ws, 10, keep, rule, damp, 0)
        p["lexical"] = lexical
        out.append((_name("context", p), p))
    for lexical, ws, c, keep, damp in itertools.product(
        (*LEXICAL_QUERIES, "lexical_me", "lexical_all"),
        (0.3, 0.5, 0.75, 1.0),
        (5.0, 10.0, 30.0),
        ((), CONTEXT_KEEP),
        (1.0, 0.95),
    ):
        p = _context(ws, 20, keep, ("crowd-late", 2.0) if keep else None, damp, 0)
        p.update({"wl": 1.0, "rrf": c, "lexical": lexical})
        out.append((_name("context", p) + f" rrf={c}", p))
    for lexical, norm, divisor, wl, wd, ws, keep, damp in itertools.product(
        LEXICAL_QUERIES,
        ("best", "minmax"),
        ("best", "bound"),
        (0.45, 0.6, 0.75),
        (0.25, 0.4, 0.55),
        (0.0, 0.15),
        ((), (2, 4, 7, 9)),
        (1.0, 0.95),
    ):
        rule = ("crowd-late", 2.0) if keep else None
        p = _hybrid(10, keep, rule, damp, 0, divisor, wl, wd, ws)
        p.update({"dense_norm": norm, "lexical": lexical})
        out.append((_name("hybrid", p), p))
    for lexical, ws, wd, c, keep in itertools.product(
        LEXICAL_QUERIES, (0.0, 0.3, 0.6), (0.75, 1.0), (5.0, 10.0), ((), (2, 4, 7, 9))
    ):
        rule = ("crowd-late", 2.0) if keep else None
        p = _hybrid(20, keep, rule, 1.0, 0, "best", 1.0, wd, ws, c)
        p["lexical"] = lexical
        out.append((_name("hybrid", p), p))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first-seed", type=int, default=101)
    parser.add_argument("--conversations", type=int, default=6)
    parser.add_argument(
        "--shapes", type=lambda s: [x for x in s.split(",") if x], default=list(SHAPES)
    )
    parser.add_argument("--cache", help="pickle of the collected questions (kept between runs)")
    parser.add_argument("--locomo", help="LoCoMo's locomo10.json: its conversations as a shape")
    parser.add_argument("--longmemeval", help="a LongMemEval file: its questions as a shape")
    parser.add_argument(
        "--written", action="store_true", help="the written evaluation (recall_eval/written.py)"
    )
    parser.add_argument(
        "--held-out",
        action="store_true",
        help="the held-out written set: to see a choice's figures there, never to make it",
    )
    parser.add_argument("--limit", type=int, help="of the public files' conversations/questions")
    parser.add_argument(
        "--show", type=int, default=10, help="rankings printed per mode, best first"
    )
    parser.add_argument("--only", action="append", default=[], help="evaluate only these rankings")
    parser.add_argument("--detail", action="append", default=[], help="a ranking to show per kind")
    parser.add_argument("--max-z", type=float, default=-1.0, help="the constraint, in std errors")
    args = parser.parse_args()
    cache = Path(args.cache) if args.cache else None
    if cache is not None and cache.exists():
        questions = pickle.loads(cache.read_bytes())
    else:
        seeds = range(args.first_seed, args.first_seed + args.conversations)
        questions = [
            q
            for shape in args.shapes
            for q in collect(shape, [conversation(shape, s) for s in seeds])
        ]
        if args.locomo:
            questions += collect("LoCoMo", public.locomo(args.locomo)[: args.limit])
        if args.longmemeval:
            convs = public.longmemeval(args.longmemeval, limit=args.limit)
            questions += collect("LongMemEval", convs)
        if args.written:
            questions += collect("written", written.conversations()[: args.limit])
        if args.held_out:
            questions += collect("held out", written.held_out()[: args.limit])
        if cache is not None:
            cache.write_bytes(pickle.dumps(questions))
    shapes = list(dict.fromkeys(q["shape"] for q in questions))
    caches: list[dict] = [{} for _ in questions]
    rankings = grid()
    if args.only:
        rankings = [r for r in rankings if r[0] in ("spec", *args.only, *args.detail)]
    results = {name: per_question(questions, p, caches) for name, p in rankings}
    spec = results["spec"]
    judged = {name: judge(questions, r, spec) for name, r in results.items()}

    print(
        f"{len(questions)} questions: "
        + ", ".join(f"{s} {sum(q['shape'] == s for q in questions)}" for s in shapes)
    )
    print(
        "| ranking | "
        + " | ".join(f"{s} any@5 / @10 / all@5 / sessions@5" for s in shapes)
        + " | worst shape's any@5 gain | mean gain | lowest margin over spec, z (cell, margin) |"
    )
    print("| --- " * (4 + len(shapes)) + "|")

    def row(name: str) -> None:
        r, j = results[name], judged[name]
        cells = []
        for s in shapes:
            sel = np.array([q["shape"] == s for q in questions])
            m = r[sel].mean(axis=0)
            cells.append(f"{m[0]:.3f} / {m[1]:.3f} / {m[2]:.3f} / {m[4]:.2f}")
        gain = min(j["gains"].values())
        print(
            f"| {name} | "
            + " | ".join(cells)
            + f" | {gain:+.3f} | {sum(j['gains'].values()) / len(shapes):+.3f}"
            + f" | {lowest(j)} |"
        )

    row("spec")
    for family in ("context", "hybrid"):
        mine = [n for n in results if n.startswith(family)]
        feasible = choose(judged, mine, args.max_z)
        print(f"| **{family}: {len(feasible)} of {len(mine)} chosen from, best first** |")
        shown = [n for n in mine if "merged" in n or "chosen" in n] + feasible[: args.show]
        for name in dict.fromkeys(shown):
            row(name)
    by_name = {name: p for name, p in rankings}
    for name in args.detail:
        detail(
            name, evaluate(questions, by_name[name]), evaluate(questions, by_name["spec"]), shapes
        )


def detail(name: str, t: dict[str, Tally], spec: dict[str, Tally], shapes: list[str]) -> None:
    """One ranking per shape and kind: any@5 / any@10 / all@5 (spec's in brackets)."""
    print(f"\n{name}: any@5 / any@10 / all@5 per kind (spec's in brackets)")
    for shape in shapes:
        cells = []
        known = KINDS.get(shape, (*public.LOCOMO_KINDS.values(), *public.LONGMEM_KINDS))
        for kind in ("all", *known):
            if t[shape].n(kind):
                mine = "/".join(f"{t[shape].rate(kind, slot):.2f}" for slot in (0, 1, 2))
                theirs = "/".join(f"{spec[shape].rate(kind, slot):.2f}" for slot in (0, 1, 2))
                cells.append(f"{kind} {mine} [{theirs}] n={t[shape].n(kind)}")
        print(f"  {shape}: " + "; ".join(cells))


if __name__ == "__main__":
    main()
