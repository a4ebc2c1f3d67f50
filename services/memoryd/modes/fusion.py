"""How the context and hybrid modes add up their evidence for a row, as parts of one score.

- The lexical part: context's bm25 (porter stems, the neighbour column, the date in words)
  divided by a scale, the best row's score (so the best lexical row holds the part's whole
  weight) or the most the query could score (lexbound.py).
- The spec's part: the spec's own ranking of the question, every word kept (spec.py), as
  SPEC_C / (SPEC_C + rank): a question answered through words the other parts drop (the
  stopwords of "what have I been doing") is still found where the spec finds it, which is what
  keeps a mode from falling below the spec on conversations unlike those it was tuned on.
- The dense part (hybrid): the cosine scores of the dense top min-maxed to 0..1.

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
    combined: dict[int, float], rowids: np.ndarray, scores: np.ndarray, weight: float, depth: int
) -> None:
    """scores over rowids (higher is better): the top depth of them, min-maxed."""
    if not len(scores) or weight == 0.0:
        return
    depth = min(depth, len(scores))
    top = np.argpartition(-scores, depth - 1)[:depth]
    high, low = float(scores[top].max()), float(scores[top].min())
    span = high - low or 1.0
    for position in top:
        rowid = int(rowids[position])
        value = (float(scores[position]) - low) / span
        combined[rowid] = combined.get(rowid, 0.0) + weight * value
