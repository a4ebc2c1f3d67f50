"""How the context and hybrid modes add up their evidence for a row, as parts of one score.

- The lexical part: context's bm25 (porter stems, the neighbour column, the date in words)
  divided by a scale, the best row's score (so the best lexical row holds the part's whole
  weight) or the most the query could score (lexbound.py).
- The spec's part: the spec's own ranking of the question, every word kept (spec.py), as
  SPEC_C / (SPEC_C + rank): a question answered through words the other parts drop (the
  stopwords of "what have I been doing") is still found where the spec finds it, which is what
  keeps a mode from falling below the spec on conversations unlike those it was tuned on.
- The dense part (hybrid): the cosine scores of the dense top over the best of them ("best": a
  row as near as the best scores the part's whole weight, one half as near half of it), or
  min-maxed to 0..1 ("minmax": the last of the top scores nothing, however near it is). Over
  the best keeps how near the rows really are: when none is near, the dense part reorders
  little, where min-maxing spreads a flat list over the whole weight. Over the best alone
  would still give the best row of a question near nothing memory holds the whole weight, and
  make every row of the top a candidate: so a row only the dense part proposes enters when its
  own cosine with the question is above a floor (a higher one when no other part found any
  row: the question holds no word memory holds), and when no row of the top is, the part adds
  nothing (a word memory never held is answered "no matches", not with the rows least far
  from it, which MiniLM puts at cosines of about 0 to 0.24).

Each part adds weight x its value to the row's score; a row absent from a part adds nothing.
"""

from collections.abc import Sequence

import numpy as np

SPEC_C = 5.0


def add_lexical(
    combined: dict[int, float], lexical: Sequence[tuple[int, float]], weight: float, bound: float
) -> None:
    """lexical: (rowid, bm25) best first, FTS5's bm25 negative. bound: the most the query
    could score, or 0.0 to divide by the best row's score."""
    if not lexical or weight == 0.0:
        return
    scale = max(bound, -lexical[0][1], 1e-9)
    for rowid, score in lexical:
        combined[rowid] = combined.get(rowid, 0.0) + weight * (-score / scale)


def add_spec(combined: dict[int, float], rowids: Sequence[int], weight: float) -> None:
    """rowids: the spec's ranking, best first."""
    if weight == 0.0:
        return
    for rank, rowid in enumerate(rowids):
        combined[rowid] = combined.get(rowid, 0.0) + weight * SPEC_C / (SPEC_C + rank)


def add_dense(
    combined: dict[int, float],
    rowids: np.ndarray,
    scores: np.ndarray,
    weight: float,
    depth: int,
    norm: str = "minmax",
    cosines: np.ndarray | None = None,
    floor: float = 0.0,
    alone: float | None = None,
) -> None:
    """scores over rowids (higher is better): the top depth of them, over the best ("best") or
    min-maxed ("minmax"); a score at or below zero adds nothing. cosines (over rowids, each
    row's own cosine with the question): a row of the top not in combined yet enters only when
    its cosine is above floor, and none does, nor is any row's score raised, when no row of
    the top is above it. alone: the floor instead when combined is empty (no other part found
    any row: the question holds no word memory holds)."""
    if not len(scores) or weight == 0.0:
        return
    if alone is not None and not combined:
        floor = alone
    depth = min(depth, len(scores))
    top = np.argpartition(-scores, depth - 1)[:depth]
    if cosines is not None and not bool((cosines[top] > floor).any()):
        return
    high, low = float(scores[top].max()), float(scores[top].min())
    if norm == "best":
        if high <= 0.0:
            return
        low = 0.0
    span = high - low or 1.0
    for position in top:
        rowid = int(rowids[position])
        if cosines is not None and rowid not in combined and cosines[position] <= floor:
            continue
        value = max(0.0, float(scores[position]) - low) / span
        combined[rowid] = combined.get(rowid, 0.0) + weight * value
