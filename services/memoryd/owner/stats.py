"""bxctl memory stats: which entries recall returns, and how big everything is.

Hit counts come from recalls/ (the recall log, one line per recall with its hits), not from the
index, so they survive a reindex. A hit on notes.md names the note by its number and digest, and
counts for that note under the number notes.md gives it now (owner/notehits.py); an entry of
memory.md or user.md is counted by the hits on notes holding its exact text (a moved entry that
came back, a promoted note). The owner's own searches ("by": "owner") are not counted. The window
is the last `days` days (30 by default), read from the month files it spans.

Every entry and note is shown behind the ref forget takes for it, so that the owner never counts
one: memory.md:N and user.md:N count from 1, note:N (notes.md's numbers, as search prints them)
from 0.
"""

import datetime as dt
import logging
import sqlite3
from collections import Counter
from pathlib import Path

from memoryd.data.carriers import read_and_held, sessions_bytes
from memoryd.errors import AdminRefused, FileDamaged, IndexDamaged, IndexUnwritable
from memoryd.home import Home
from memoryd.home import tree_size as _tree_size
from memoryd.journal import forgottensaid
from memoryd.memory import entries, shown
from memoryd.memory.memfiles import read_entries
from memoryd.modes import progress
from memoryd.owner import indexstate, paging, statsnotes
from memoryd.owner.datalock import stopped_forget
from memoryd.owner.recallcounts import note_hits, why
from proto.plural import counted

log = logging.getLogger(__name__)

IDENTITY = ("memory.md", "user.md")


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def sizes(
    home: Home, held: list[tuple[str, int | None, int]] | None = None
) -> dict[str, int | None]:
    """The files' sizes; held, the session logs' sizes when the caller looked at them: sessions/
    is then sized from them and one stat of each baseline beside (carriers.sessions_bytes), not
    walked folder by folder (a second a call on a home of tens of thousands of sessions)."""
    out = {
        name: _size(home.memory_file(name))
        for name in ("soul.md", "memory.md", "user.md", "notes.md", "pending.jsonl")
    }
    db = home.index_db
    out["index"] = sum(s or 0 for s in (_size(db), _size(Path(f"{db}-wal"))))
    out["edits/"] = _tree_size(home.edits)
    out["recalls/"] = _tree_size(home.recalls)
    out["sessions/"] = (
        _tree_size(home.sessions) if held is None else sessions_bytes(home.sessions, held)
    )
    return out


def collect(home: Home, days: int, now: dt.datetime, index=None) -> dict:
    since = now - dt.timedelta(days=days)
    held = _logs(index)
    unread: list[str] = []
    kept: dict[str, list[str] | FileDamaged] = {}
    for name in IDENTITY:
        try:
            kept[name] = read_entries(home, name)
        except FileDamaged as e:
            kept[name] = e
    texts = {e for each in kept.values() if isinstance(each, list) for e in each}
    # notes.md is read a note at a time, keeping a few bytes of each (statsnotes.py)
    read = statsnotes.read(home, texts, why)
    unread += read.unread
    # notes.md that cannot be read now tells nothing of its notes: a hit is not said to name a
    # note it no longer holds (the line above says why none is shown).
    counts, recalls = note_hits(home, since, now, unread, notes=read.ids)
    by_text: Counter = Counter()
    for number, text in read.holding.items():
        by_text[text] += counts.get(number, 0)
    files: dict[str, dict[str, object]] = {}
    for name, file_entries in kept.items():
        if isinstance(file_entries, FileDamaged):
            files[name] = {"problem": str(file_entries), "entries": []}
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
        for n in read.moved
    ]
    return {
        "days": days,
        "since": since.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "recalls": recalls,
        "files": files,
        "moved": moved,
        "sizes": sizes(home, held),
        "embedding": progress.embedding(home.index_db),
        # A changed recall mode's build a part at a time: {"built": rows, "of": about how many}.
        "mode_build": index.mode_build if index is not None else None,
        "index": indexstate.state(index, held) if index is not None else None,
        "unread": unread,
        "forget_stopped": forget_stopped(home),
    }


def _logs(index) -> list[tuple[str, int | None, int]] | None:
    """Each session log's (session, bytes read, size), looked at once for both the unread list
    and sessions/'s size; None without an index, or when it cannot be read (the unread list
    then says nothing, as before, and sessions/ is walked)."""
    if index is None:
        return None
    try:
        return read_and_held(index)
    except (IndexDamaged, IndexUnwritable, sqlite3.Error, OSError):
        return None


def forget_stopped(home: Home) -> str | None:
    """One line when a forget stopped part way (a kill, a full disk) and waits to be run again:
    until then its records are kept out of recall, but its text may still be in a file. Nothing
    while a forget runs: its record stands until its last step, and is no stop."""
    try:
        stopped = stopped_forget(home)
    except AdminRefused as e:
        return str(e).removeprefix("refused: ")
    if stopped is None:
        return None
    return (
        f"a forget of {stopped.what} stopped part way; its text may still be in "
        f"{forgottensaid.places(home.memory, stopped)}: run bxctl memory forget "
        f"{stopped.ref!r} again to finish it"
    )


# What the saved print holds in place of a text the files no longer hold: no entry is empty, so a
# forget by that number is refused as for any entry removed since stats printed it.
GONE_SINCE = ""


def _keep_print(home: Home, index, files: dict[str, dict]) -> None:
    """Save the entries printed as the numbers forget takes, then look at the files again: a
    forget may have erased one of them, and scrubbed the saved print (memory/shown.scrub),
    between the read above and this save, which would bring its text back into index/shown.json.
    A forget scrubs after its edits, so a text the files still hold once the print is saved is
    scrubbed by any forget that takes it later; a text neither file holds any more is taken out
    here (a forget by its number would be refused all the same)."""
    printed: set[str] = set()
    for name, info in files.items():
        if "problem" not in info:
            texts = [str(e["entry"]) for e in info["entries"]]
            shown.print_entries(index, name, texts)
            printed.update(texts)
    held: set[str] = set()
    for name in IDENTITY:
        try:
            held.update(read_entries(home, name))
        except (FileDamaged, OSError):
            pass  # its entries count as gone: a forget by number reads it and refuses alike
    for text in sorted(printed - held):
        shown.scrub(index, text, GONE_SINCE)


def entry_ref(file: str, number: int) -> str:
    """The ref forget takes for the entry at number (counted from 1) of file."""
    return f"{file}:{number}"


def _short(text: str) -> str:
    return entries.shorten(text, 100)


def render(stats: dict) -> str:
    lines = [
        f"recall in the last {counted(stats['days'], 'day')}:"
        f" {counted(stats['recalls'], 'recall')} by sessions"
    ]
    lines += stats.get("unread", [])
    if stats.get("forget_stopped"):
        lines.append(stats["forget_stopped"])
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


def answer(
    home: Home, days: int, now: dt.datetime, as_json: bool, index=None, for_owner: bool = True
) -> str:
    """stats prints note numbers (note:N of moved notes) as search does, from notes.md as it
    is: forget and promote take them on the same terms (index/notesseen.py, shown); and the
    entries' refs, which forget takes as naming the entries printed here (memory/shown.py).
    for_owner=False: a program reads it (scripts/stack status), and neither counts as printed."""
    seen = index.notes_seen if index is not None and for_owner else None
    renumbered = seen.renumbered if seen is not None else 0  # first, as search takes it
    stats = collect(home, days, now, index)
    if seen is not None:
        seen.print_numbers(
            (int(m["ref"].removeprefix("note:")) for m in stats["moved"]), renumbered
        )
    # forget takes memory.md:N and user.md:N as the entries printed here (memory/shown.py)
    if for_owner:
        _keep_print(home, index, stats["files"])
    if as_json:
        page = paging.json_page(stats["moved"], lambda m: m, budget=paging.PAGE_BYTES // 2)
        stats["moved_total"] = page.total
        stats["moved"] = page.shown
        return paging.dumps(stats)
    return render(stats)
