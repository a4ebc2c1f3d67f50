"""Counts in the sentences every role prints: "1 note", "2 notes", "1 entry", "1,208 records"."""


def counted(n: int, one: str, many: str | None = None) -> str:
    """n with its noun, singular for exactly one; many defaults to one + "s"."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"
