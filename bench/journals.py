"""A journal line of an edit of memory.md, as memoryd writes it, for benchmarks that build a long
journal without memoryd (bench_owner.py, bench_journal_walk.py)."""


def edit_line(month: str, n: int, before: list[str], after: list[str], action: str) -> dict:
    """The n-th edit of the month (YYYY-MM): memory.md's entries before and after it."""
    return {
        "id": f"{month}-01-{n:06d}",
        "time": f"{month}-01T00:00:00Z",
        "session": f"mm-s{n % 977:04d}",
        "call": f"c{n}",
        "taint": "private",
        "untrusted": False,
        "action": action,
        "file": "memory.md",
        "to": "memory.md",
        "before": list(before),
        "after": list(after),
        "notes": [],
    }
