"""The numbers of a day's pending ids, as ranges: which of them neither pending.jsonl holds nor the
journal resolves, which rest on the ids floor alone, and which forget an older memoryd made would
have taken. Pure arithmetic over (low, high] ranges, apart from review.py, which says what they
mean to the owner.
"""

import datetime as dt

from memoryd.journal import forgotpending

Found = tuple[int, str, str]  # how many ids, the first, the last
Span = tuple[int, int]  # the numbers (low, high] of a day


def by_taker(
    day: str,
    span: Span,
    stamps: list[tuple[int, dt.datetime]],
    forgets: list[forgotpending.Unnamed],
) -> list[tuple[Span, forgotpending.Unnamed | None]]:
    """span cut into pieces by the forget that would first have taken their numbers' writes
    (None: none was made since). A number was handed out on its day, and after every lower one
    of its day that pending.jsonl holds with its time (stamps)."""
    try:
        after = dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC)
    except ValueError:
        return [(span, None)]
    if not forgets:
        return [(span, None)]
    low, high = span
    out: list[tuple[Span, forgotpending.Unnamed | None]] = []
    for number, when in stamps:
        if number >= high:
            break
        if number > low:
            joined(out, (low, number), forgotpending.taker(forgets, after))
            low = number
        after = max(after, when)
    joined(out, (low, high), forgotpending.taker(forgets, after))
    return out


def joined(out: list, piece: Span, forget: forgotpending.Unnamed | None) -> None:
    """piece added to out, joined to the last one when the same forget would have taken both."""
    if out and out[-1][1] == forget:
        out[-1] = ((out[-1][0][0], piece[1]), forget)
    else:
        out.append((piece, forget))


def floor_only(number: int, spans: list[tuple[int, int]], held: set[int]) -> bool:
    """Whether a day's number rests on the floor alone (floor_spans)."""
    return any(low < number <= high for low, high in floor_spans(spans, held, number))


def floor_spans(spans: list[tuple[int, int]], held: set[int], top: int) -> list[tuple[int, int]]:
    """The numbers of a day, up to top, that rest on the floor alone, as ranges (low, high] in
    order and apart: within a range only the floor gave, above every number of it pending.jsonl
    or the journal holds (ids count on, so a number held vouches for those below it)."""
    out: list[tuple[int, int]] = []
    for low, high in sorted(spans):
        vouched = max((k for k in held if low < k <= high), default=low)
        low, high = vouched, min(high, top)
        if low >= high:
            continue
        if out and low <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], high))
        else:
            out.append((low, high))
    return out


def between(spans: list[tuple[int, int]], top: int) -> list[tuple[int, int]]:
    """The ranges (low, high] of 1..top outside spans (in order and apart)."""
    out, low = [], 0
    for start, end in spans:
        if start > low:
            out.append((low, start))
        low = max(low, end)
    if top > low:
        out.append((low, top))
    return out


def missing(day: str, span: tuple[int, int], held: set[int]) -> list[tuple[int, str, str]]:
    """The numbers of (low, high] held does not hold: [(how many, the first id, the last)] or []
    (found by stepping over held numbers only, not through the range)."""
    low, high = span
    n = high - low - sum(1 for k in held if low < k <= high)
    if n <= 0:
        return []
    first = next(k for k in range(low + 1, high + 1) if k not in held)
    last = next(k for k in range(high, low, -1) if k not in held)
    return [(n, f"p-{day}-{first:04d}", f"p-{day}-{last:04d}")]


def summed(gone: list[tuple[int, str, str]]) -> tuple[int, str, str] | None:
    """Ranges in order, summed: (how many, the first id, the last), or None for none."""
    return (sum(n for n, _, _ in gone), gone[0][1], gone[-1][2]) if gone else None
