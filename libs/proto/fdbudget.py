"""Sharing the process's file descriptors between its sockets, with some kept in reserve.

Each socket is served with a cap on its open connections (proto.server). When the caps add up to
more than the descriptor limit minus RESERVE (what the process needs besides connections: SQLite
files, journals, logs, threads' files), one flooded socket could still leave the others without a
descriptor. So a role asks for its caps here: the soft limit is raised toward the hard one if that
is enough, else the caps are scaled down in proportion, each at least 1.
"""

import resource
from collections.abc import Mapping

RESERVE = 128


def fit_caps(wanted: Mapping[str, int], limit: int, reserve: int = RESERVE) -> dict[str, int]:
    """The caps to use under a descriptor limit: wanted if they fit, else scaled down."""
    room = max(limit - reserve, len(wanted))
    total = sum(wanted.values())
    if total <= room:
        return dict(wanted)
    return {name: max(1, cap * room // total) for name, cap in wanted.items()}


def descriptor_limit(needed: int) -> int:
    """The soft RLIMIT_NOFILE, raised toward needed (not past the hard limit) when below it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        if target > soft:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
                soft = target
            except (ValueError, OSError):
                pass
    return soft if soft != resource.RLIM_INFINITY else needed


def share(wanted: Mapping[str, int], reserve: int = RESERVE) -> tuple[dict[str, int], int]:
    """(the caps to use, the descriptor limit they were fitted under)."""
    limit = descriptor_limit(sum(wanted.values()) + reserve)
    return fit_caps(wanted, limit, reserve), limit
