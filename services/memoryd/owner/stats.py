"""bxctl memory stats: which entries recall returns, and how big everything is.

Hit counts come from recalls/ (the recall log, one line per recall with its hits), not from the
index, so they survive a reindex. A hit on notes.md names the note by its number; an entry of
memory.md or user.md is counted by the hits on notes holding its exact text (a moved entry that
came back, a promoted note). The owner's own searches ("by": "owner") are not counted. The window
is the last `days` days (30 by default), read from the month files it spans.

Every entry and note is shown behind the ref forget takes for it, so that the owner never counts
one: memory.md:N and user.md:N count from 1, note:N (notes.md's numbers, as search prints them)
from 0.
"""

import datetime as dt
import logging
import os
import re
from collections import Counter
from pathlib import Path

from memoryd.errors import FileDamaged
from memoryd.home import Home, read_file
from memoryd.journal.linefile import parse_line
from memoryd.journal.recallline import RecallLine
from memoryd.memory import entries, notes
from memoryd.memory.memfiles import read_entries
from memoryd.modes import progress
from memoryd.owner import indexstate, paging
from proto.files import NotRegular, TooLarge
from proto.plural import counted

log = logging.getLogger(__name__)

IDENTITY = ("memory.md", "user.md")


def _months(since: dt.datetime, until: dt.datetime) -> list[str]:
    out, year, month = [], since.year, since.month
    while (year, month) <= (until.year, until.month):
        out.append(f"{year:04d}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return out


# What RecallLog writes (recall.log_line: compact JSON, time first, a hit's keys in this order, the
# owner's mark after the hits, and "partial" or "mode" after it when set). Session ids are
# validated, so they hold no escapes; a query's quotes are escaped, so the mark's unescaped quotes
# can only be the key itself.
TIME_PREFIX = b'{"time":"'
OWNER_MARK = b',"by":"owner"'
NOTE_HIT = re.compile(
    rb'"kind":"(?:noted|moved|dropped)","session":"[A-Za-z0-9_-]*","record":(\d+)'
)


def _hits(data: bytes) -> Counter:
    counts: Counter = Counter()
    for number, hits in Counter(NOTE_HIT.findall(data)).items():
        counts[int(number)] += hits
    return counts


def count_whole_month(data: bytes, cutoff: bytes) -> tuple[Counter, int] | None:
    """The fast way, for a month file memoryd wrote whole (every line in its own form) that lies
    entirely in the window (its first line is not older than cutoff): one regular expression over
    the whole file, less the owner's lines. None when the file is not like that."""
    start = len(TIME_PREFIX)
    if not data.startswith(TIME_PREFIX) or data[start : start + 19] < cutoff:
        return None
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    if data.count(b"\n" + TIME_PREFIX) + 1 != lines:
        return None
    counts = _hits(data)
    recalls = lines
    position = data.find(OWNER_MARK)
    while position != -1:
        line_start = data.rfind(b"\n", 0, position) + 1
        counts.subtract(_hits(data[line_start:position]))
        recalls -= 1
        line_end = data.find(b"\n", position)
        if line_end == -1:
            break
        position = data.find(OWNER_MARK, line_end)
    return +counts, recalls


def count_month(data: bytes, cutoff: bytes, path: Path | None = None) -> tuple[Counter, int]:
    """Note hits and agent recalls in one month file's bytes, from cutoff (YYYY-MM-DDTHH:MM:SS).

    The lines are picked by their time and the owner's mark without parsing them, and the hits
    found with one regular expression over the picked lines; a line memoryd did not write in its
    own form is validated as a RecallLine instead (a damaged one is skipped, naming path and
    the line)."""
    whole = count_whole_month(data, cutoff)
    if whole is not None:
        return whole
    start = len(TIME_PREFIX)
    picked: list[bytes] = []
    counts: Counter = Counter()
    recalls = 0
    damaged, first = 0, ""
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        if raw.startswith(TIME_PREFIX):
            if raw[start : start + 19] >= cutoff and OWNER_MARK not in raw:
                picked.append(raw)
            continue
        line = parse_line(raw, RecallLine)
        if isinstance(line, str):
            damaged += 1
            first = first or f"line {number} {line}"
            continue
        if line.by == "owner" or line.time[:19].encode() < cutoff:
            continue
        recalls += 1
        for hit in line.hits:
            if hit.kind in ("noted", "moved", "dropped"):
                counts[hit.record] += 1
    if damaged:  # one line per file and stats, however many lines a hand edit spoilt
        more = f" and {counted(damaged - 1, 'line')} more" if damaged > 1 else ""
        log.warning("%s: %s%s; not counted", path or "recall log", first, more)
    recalls += len(picked)
    counts.update(_hits(b"\n".join(picked)))
    return counts, recalls


def note_hits(
    home: Home, since: dt.datetime, until: dt.datetime, unread: list[str] | None = None
) -> tuple[Counter, int]:
    """Hits per note number in the window, and how many agent recalls it holds. A month file
    that is not a regular file (a FIFO, a link, a folder) is never waited on nor followed: it
    is not counted, and unread gets one line saying why."""
    counts: Counter = Counter()
    recalls = 0
    cutoff = since.strftime("%Y-%m-%dT%H:%M:%S").encode()
    for month in _months(since, until):
        path = home.recalls / f"{month}.jsonl"
        try:
            data = read_file(path)
        except FileNotFoundError:
            continue
        except OSError as e:
            said = f"memory/recalls/{month}.jsonl: {_why(e)}; not counted"
            log.warning("%s", said)
            if unread is not None:
                unread.append(said)
            continue
        month_counts, month_recalls = count_month(data, cutoff, path)
        counts.update(month_counts)
        recalls += month_recalls
    return counts, recalls


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def _tree_size(path: Path) -> int:
    total = 0
    try:
        with os.scandir(path) as it:
            for item in it:
                if item.is_dir(follow_symlinks=False):
                    total += _tree_size(Path(item.path))
                elif item.is_file(follow_symlinks=False):
                    total += item.stat(follow_symlinks=False).st_size
    except OSError:
        pass
    return total


def sizes(home: Home) -> dict[str, int | None]:
    out = {
        name: _size(home.memory_file(name))
        for name in ("soul.md", "memory.md", "user.md", "notes.md", "pending.jsonl")
    }
    db = home.index_db
    out["index"] = sum(s or 0 for s in (_size(db), _size(Path(f"{db}-wal"))))
    out["edits/"] = _tree_size(home.edits)
    out["recalls/"] = _tree_size(home.recalls)
    out["sessions/"] = _tree_size(home.sessions)
    return out


def _why(error: OSError) -> str:
    """What is wrong with a file, in words that follow its name."""
    if isinstance(error, (NotRegular, TooLarge)):
        return f"is {error.strerror}"  # "is a FIFO, not a regular file"
    return error.strerror or str(error)


def collect(home: Home, days: int, now: dt.datetime, index=None) -> dict:
    since = now - dt.timedelta(days=days)
    unread: list[str] = []
    counts, recalls = note_hits(home, since, now, unread)
    try:
        all_notes = notes.parse(read_file(home.memory_file("notes.md")))
    except FileNotFoundError:
        all_notes = []
    except OSError as e:
        unread.append(f"memory/notes.md: {_why(e)}; its notes not shown")
        all_notes = []
    by_text: Counter = Counter()
    for note in all_notes:
        by_text[note.text] += counts.get(note.number, 0)
    files: dict[str, dict[str, object]] = {}
    for name in IDENTITY:
        try:
            file_entries = read_entries(home, name)
        except FileDamaged as e:
            files[name] = {"problem": str(e), "entries": []}
            continue
        files[name] = {
            "length": entries.length(file_entries),
            "limit": entries.LIMITS[name],
            "entries": [
                {"ref": entry_ref(name, n), "entry": e, "hits": by_text.get(e, 0)}
                for n, e in enumerate(file_entries, start=1)
            ],
        }
    moved = [
        {
            "ref": f"note:{n.number}",
            "from": n.source,
            "time": n.time,
            "entry": n.text,
            "hits": counts.get(n.number, 0),
        }
        for n in all_notes
        if n.kind == "moved"
    ]
    return {
        "days": days,
        "since": since.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "recalls": recalls,
        "files": files,
        "moved": moved,
        "sizes": sizes(home),
        "embedding": progress.embedding(home.index_db),
        "index": indexstate.state(index) if index is not None else None,
        "unread": unread,
    }


def entry_ref(file: str, number: int) -> str:
    """The ref forget takes for the entry at number (counted from 1) of file."""
    return f"{file}:{number}"


def _short(text: str) -> str:
    return entries.shorten(text, 100)


def render(stats: dict) -> str:
    lines = [f"recall in the last {stats['days']} days: {stats['recalls']:,} recalls by sessions"]
    lines += stats.get("unread", [])
    never = []
    for name, info in stats["files"].items():
        if "problem" in info:
            lines.append(f"{name}: {info['problem']}")
            continue
        lines.append(f"{name} ({info['length']:,} of {info['limit']:,} characters):")
        for e in info["entries"]:
            lines.append(f"  {e['hits']:>6,}  {e['ref']}: {_short(e['entry'])}")
            if not e["hits"]:
                never.append(f"{e['ref']}: {_short(e['entry'])}")
    page = paging.text_page(
        stats["moved"],
        lambda m: f"  {m['hits']:>6,}  {m['ref']} from {m['from']}: {_short(m['entry'])}",
        budget=paging.PAGE_BYTES // 2,
    )
    lines.append(f"moved notes ({len(stats['moved']):,}):")
    lines.extend(page.shown)
    if not page.complete:
        lines.append(f"  (showing {len(page.shown):,} of {page.total:,}: one answer holds no more)")
    never += [f"{m['ref']}: {_short(m['entry'])}" for m in stats["moved"] if not m["hits"]]
    lines.append(f"never recalled ({len(never):,}):")
    shown = paging.text_page(never, lambda s: "  " + s, budget=paging.PAGE_BYTES // 4)
    lines.extend(shown.shown)
    if not shown.complete:
        lines.append(f"  (and {shown.total - len(shown.shown):,} more)")
    lines.extend(indexstate.lines(stats.get("index")))
    if (embedding := progress.line(stats.get("embedding"))) is not None:
        lines.append(embedding)
    lines.append("sizes (bytes):")
    for name, size in stats["sizes"].items():
        lines.append(f"  {name:<14} {'missing' if size is None else f'{size:,}'}")
    return "\n".join(lines)


def answer(home: Home, days: int, now: dt.datetime, as_json: bool, index=None) -> str:
    """stats prints note numbers (note:N of moved notes) as search does, from notes.md as it
    is: forget and promote take them on the same terms (index/notesseen.py, shown)."""
    seen = index.notes_seen if index is not None else None
    renumbered = seen.renumbered if seen is not None else 0  # first, as search takes it
    stats = collect(home, days, now, index)
    if seen is not None:
        seen.print_numbers(
            (int(m["ref"].removeprefix("note:")) for m in stats["moved"]), renumbered
        )
    if as_json:
        page = paging.json_page(stats["moved"], lambda m: m, budget=paging.PAGE_BYTES // 2)
        stats["moved_total"] = page.total
        stats["moved"] = page.shown
        return paging.dumps(stats)
    return render(stats)
