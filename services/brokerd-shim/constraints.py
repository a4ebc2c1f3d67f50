"""An owner grant's constraints, as brokerd-shim reads them: hosts, paths, patterns.

A grant with no constraints covers every call of its tool. Each non-empty list narrows it:
- hosts: the call's "url" argument must have one of these hosts (compared in lower case);
- paths: the call's "path" argument, or else the path of its "url", must be one of these paths or
  lie under one (a segment of "..", or a path that is not absolute, never matches);
- patterns: the call's "url", or else its "path", must match one of these shell patterns (fnmatch,
  case-sensitive).
A call that lacks the argument a constraint reads is not covered. recall and memory take no
constraints (spec 8).
"""

import fnmatch
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Constraints:
    hosts: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.hosts or self.paths or self.patterns)


def _url_parts(arguments: dict) -> tuple[str | None, str | None]:
    url = arguments.get("url")
    if not isinstance(url, str):
        return None, None
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return None, None
    return (host.lower() if host else None), (parts.path or "/")


def _under(path: str, prefix: str) -> bool:
    if not path.startswith("/") or ".." in path.split("/"):
        return False
    prefix = prefix.rstrip("/") or "/"
    return path == prefix or path.startswith(prefix if prefix == "/" else prefix + "/")


def why_not_covered(constraints: Constraints, arguments: dict) -> str | None:
    """None when the call is covered; otherwise the constraint it fails, as a short phrase."""
    host, url_path = _url_parts(arguments)
    if constraints.hosts and host not in {h.lower() for h in constraints.hosts}:
        return "its host is not among the grant's hosts"
    if constraints.paths:
        path = arguments.get("path")
        path = path if isinstance(path, str) else url_path
        if path is None or not any(_under(path, p) for p in constraints.paths):
            return "its path is not under the grant's paths"
    if constraints.patterns:
        subject = arguments.get("url", arguments.get("path"))
        if not isinstance(subject, str) or not any(
            fnmatch.fnmatchcase(subject, p) for p in constraints.patterns
        ):
            return "it matches none of the grant's patterns"
    return None
