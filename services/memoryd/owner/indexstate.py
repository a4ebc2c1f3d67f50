"""How far the index is with the session logs, as `bxctl memory stats` and `scripts/stack status`
show it: the start's catch-up while it runs, the logs it tried and could not index (tried again),
and the logs left aside until they change (a link, a FIFO, a damaged record). Every sentence is
said only while true: "every session log indexed" only when none of those stands.
"""

from proto.plural import counted

# The logs named one by one, the first ones: the count says how many in all.
SHOWN = 10


def state(index) -> dict:
    """How far the index is with the session logs: the start's catch-up while it runs, and the
    logs a whole pass could not index (each with why), which stay out until memoryd can."""
    left = sorted(index.not_indexed.items())
    aside = sorted(index.left_aside.items())
    return {
        "catching_up": list(index.catching_up) if index.catching_up is not None else None,
        "not_indexed_total": len(left),
        "not_indexed": [
            {"log": f"sessions/{session}/0.jsonl", "problem": why} for session, why in left[:SHOWN]
        ],
        "left_aside_total": len(aside),
        "left_aside": [
            {"log": f"sessions/{session}/0.jsonl", "problem": why} for session, why in aside[:SHOWN]
        ],
    }


def _listed(head: str, total: int, shown: list[dict]) -> list[str]:
    lines = [head] + [f"  {item['log']}: {item['problem']}" for item in shown]
    if total > len(shown):
        lines.append(f"  (and {total - len(shown):,} more)")
    return lines


def lines(found: dict | None) -> list[str]:
    """The lines of state()'s answer (none without one)."""
    if found is None:
        return []
    if found["catching_up"] is not None:
        read, logs = found["catching_up"]
        return [f"index: catching up, {read:,} of {logs:,} session logs read"]
    total, aside = found["not_indexed_total"], found.get("left_aside_total", 0)
    if not total and not aside:
        return ["index: every session log indexed"]
    said: list[str] = []
    if total:
        head = (
            f"index: {counted(total, 'session log')} not indexed (memoryd tries again every 30 s"
            " and when a turn ends):"
        )
        said += _listed(head, total, found["not_indexed"])
    if aside:
        head = (
            f"index: {counted(aside, 'session log')} left aside, wholly or from a damaged record"
            " (read again at its session's next turn, a restart or bxctl reindex):"
        )
        said += _listed(head, aside, found["left_aside"])
    return said
