"""bxctl memory log and pending, paged and as JSON.

`log N` is the last N edits, oldest first; `log N --from ID` is N edits starting at ID. `pending`
is every waiting edit; `pending --from ID` starts at ID. A page holds what fits in PAGE_BYTES and
then says how many there are and the command that shows the rest. A short answer reads exactly as
before paging existed.
"""

from dataclasses import dataclass, field
from pathlib import Path

from memoryd.errors import AdminRefused
from memoryd.journal import damaged, forgotpending, idform, lostbefore, twice
from memoryd.journal import months as journalmonths
from memoryd.journal import scan as journalscan
from memoryd.journal.idform import EDIT_ID, PENDING_ID
from memoryd.journal.journal import EditLine, Journal
from memoryd.memory.pendingline import PendingLine
from memoryd.memory.pendingspans import Found
from memoryd.owner import admin_text, paging
from memoryd.owner.args import LogArg, PendingArg
from proto.plural import counted


def log_window(
    journal: Journal, n: int, start: str | None, skipped: list[damaged.Damaged] | None = None
) -> list[EditLine]:
    """The edits log N (--from ID) names, oldest first, read from the journal's end (or from
    ID's line) through journalscan, so a long journal costs only the lines shown; skipped gets
    the damaged lines passed over among them."""
    months = journal.month_files()
    if start is None:
        return journalscan.tail(months, n, skipped)
    if not EDIT_ID.match(start):
        raise AdminRefused(f"refused: {start[:64]!r} is not an edit id (YYYY-MM-DD-NNNN)")
    window = journalscan.from_id(journalmonths.from_month(months, start), start, n, skipped)
    if window is None:
        raise AdminRefused(journal.missing_sentence(start))
    return window


def log_item(record: EditLine) -> dict:
    """An edit as log --json gives it: the same session and file as its text line."""
    keys = ("id", "time", "session", "action", "file", "to", "untrusted")
    item = {k: getattr(record, k) for k in keys}
    item["session"] = record.session or admin_text.OWNER
    return {**item, "where": admin_text.where(record)}


def damaged_said(skipped: list[damaged.Damaged]) -> str | None:
    """The line log adds when damaged journal lines were passed over: how many, which ids (when
    their start still says), in which files, and why (each said in memoryd's log, damaged.py)."""
    if not skipped:
        return None
    ids = [found.id for found in skipped if found.id]
    files = ", ".join(sorted({str(found.path) for found in skipped}))
    named = f" (edit{'s' if len(ids) > 1 else ''} {', '.join(ids[:5])}" if ids else ""
    if ids:
        named += f" and {len(ids) - 5:,} more)" if len(ids) > 5 else ")"
    one = len(skipped) == 1
    if all(found.torn for found in skipped):
        lines = ", ".join(f"{found.number:,}" for found in skipped[:5])
        parse = (
            f"line{'' if one else 's'} {lines}, {'it was' if one else 'they were'} {damaged.TORN}"
            " (the write stands in the files)"
        )
    else:
        parse = "it does not parse" if one else "they do not parse"
    return (
        f"({counted(len(skipped), 'damaged journal line')}{named} not listed, in {files}: "
        f"{parse}; memoryd's log says what is wrong)"
    )


# Said when the journal's lines are gone while memoryd had journalled edits.
LINES_LOST = (
    "the journal holds no edits, but memoryd journalled edits up to {last}: their lines have left"
    " memory/edits/ since (deleted or replaced); the memory files stand as they are and nothing"
    " was changed. A backup holds the lines up to its time: tar -xzOf ARCHIVE memory/edits prints"
    " them and changes nothing. Restoring it does not bring them back alone: restore --replace"
    " also takes memory.md, user.md, notes.md and soul.md back to the backup, and every entry"
    " written since leaves them (runbook: journal-lost)"
)


def log_answer(journal: Journal, arg: LogArg) -> str:
    skipped: list[damaged.Damaged] = []
    window = log_window(journal, arg.n, arg.from_, skipped)
    said = damaged_said(skipped)
    # an id two lines hold is listed twice (or once, its other line outside the window): said
    held_twice = twice.among(journal.month_files(), [r.id for r in window]) if window else {}
    # (a damaged line holds what was journalled: said above, not as lines gone)
    gone = not window and arg.from_ is None and not skipped
    last = journal.issued.last("edit") if gone else None
    if last is not None:
        # An empty history is not the truth when memoryd handed edits out: their lines are lost.
        # The memory files are whole and current: the way to the lines must leave them so. A
        # restore brings back an archive's files with its journal, so it is named for what it
        # costs, never offered as the way back.
        raise AdminRefused(f"refused: {LINES_LOST.format(last=last)}")
    # Where the listing reaches the journal's oldest line, the edits journalled before it whose
    # lines are gone are said, or the oldest edit listed would pass for the home's first.
    lost = lostbefore.lost(journal.month_files(), journal.issued) if window else None
    reached = arg.from_ is None and len(window) < arg.n  # the tail ran out: the oldest is shown
    if lost is not None and not reached and idform.order(window[0].id) > idform.order(lost.held):
        lost = None
    if arg.json_:
        page = paging.json_page(window, log_item)
        rest = _log_rest(window, page, arg.n)
        return paging.dumps(
            {
                "total": page.total,
                "shown": len(page.shown),
                "cut": page.cut,
                "edits": page.shown,
                "rest": rest,
                "damaged": [damaged_item(found) for found in skipped],
                "lost": None
                if lost is None
                else {"first": lost.first, "before": lost.held, "runbook": "journal-lost"},
                "twice": [
                    {"id": i, "lines": [{"file": str(p.path), "line": p.number} for p in places]}
                    for i, places in held_twice.items()
                ],
            }
        )
    if not window:
        empty = admin_text.NO_EDITS if arg.from_ is None else f"no edits from {arg.from_}"
        return empty if said is None else f"{empty}\n{said}"
    page = paging.text_page(window, admin_text.log_line)
    lines = list(page.shown)
    if said is not None:
        lines.append(said)
    lines.extend(f"({sentence})" for sentence in twice.said_of(held_twice))
    if lost is not None:
        lines.append(f"({lostbefore.sentence(lost)})")
    rest = _log_rest(window, page, arg.n)
    if rest is not None:
        lines.append(
            f"(showing {len(page.shown):,} of {page.total:,} edits, {window[0].id} to "
            f"{window[len(page.shown) - 1].id}; to see the rest: {rest})"
        )
    if page.cut:
        lines.append(f"({page.cut:,} lines were cut to {paging.ITEM_BYTES:,} bytes)")
    return "\n".join(lines)


def damaged_item(found: damaged.Damaged) -> dict:
    """A damaged journal line as log --json gives it: what damaged_said says of it."""
    return {"file": str(found.path), "line": found.number, "id": found.id, "torn": found.torn}


def _log_rest(window: list[EditLine], page: paging.Page, n: int) -> str | None:
    if page.complete:
        return None
    left = page.total - len(page.shown)
    return f"bxctl memory log {left} --from {window[len(page.shown)].id}"


def pending_window(items: list[PendingLine], start: str | None) -> list[PendingLine]:
    if start is None:
        return items
    if not PENDING_ID.match(start):
        raise AdminRefused(f"refused: {start[:64]!r} is not a pending id (p-YYYY-MM-DD-NNNN)")
    for position, item in enumerate(items):
        if item.id == start:
            return items[position:]
    raise AdminRefused(f"refused: no edit {start} is waiting for review")


@dataclass(frozen=True)
class PendingSaid:
    """What pending says beside the staged writes it lists, in its text and its JSON alike:
    the lines of pending.jsonl (path) that do not parse, as (line number, the id it still names),
    and the staged writes whose lines left it: lost, lost_on_floor (numbers only the floor file
    gives, which may be the damaged one) and taken (by an older memoryd's forget). The text says
    the writes gone in lost_sentence's words; the JSON gives the fields."""

    path: Path
    damaged: list[tuple[int, str | None]] = field(default_factory=list)
    lost_sentence: str | None = None
    lost: Found | None = None
    lost_on_floor: Found | None = None
    floor: Path | None = None
    taken: list[tuple[forgotpending.Unnamed, Found]] = field(default_factory=list)


def pending_damaged_said(path, damaged: list[tuple[int, str | None]]) -> str | None:
    """The line pending adds when lines of pending.jsonl do not parse: which, and the ids."""
    if not damaged:
        return None
    ids = [named for _, named in damaged if named]
    numbers = ", ".join(str(number) for number, _ in damaged[:5])
    named = f" ({', '.join(ids[:5])})" if ids else ""
    parse = "it does not parse" if len(damaged) == 1 else "they do not parse"
    return (
        f"({counted(len(damaged), 'damaged line')} of {path} not listed{named}, line"
        f"{'s' if len(damaged) > 1 else ''} {numbers}: {parse}; mend or delete "
        f"{'it' if len(damaged) == 1 else 'them'})"
    )


def pending_lines_said(said: PendingSaid) -> str | None:
    """The lines pending's text adds below its list: damaged lines, then the writes gone."""
    lines = [pending_damaged_said(said.path, said.damaged), said.lost_sentence]
    shown = [line for line in lines if line is not None]
    return "\n".join(shown) if shown else None


def _gone_item(found: Found) -> dict:
    count, first, last = found
    return {"count": count, "first": first, "last": last}


def pending_said_json(said: PendingSaid) -> dict:
    """The fields pending --json adds for what its text says below the list: damaged (each line
    that does not parse, named as log --json names its own), lost, lost_on_floor and taken."""
    return {
        "damaged": [
            {"file": str(said.path), "line": number, "id": named} for number, named in said.damaged
        ],
        "lost": None if said.lost is None else {**_gone_item(said.lost), "runbook": "journal-lost"},
        "lost_on_floor": None
        if said.lost_on_floor is None
        else {
            **_gone_item(said.lost_on_floor),
            "according_to": None if said.floor is None else str(said.floor),
            "runbook": "journal-lost",
        },
        "taken": [
            {**_gone_item(found), "forget": forget.edit, "date": forget.date}
            for forget, found in said.taken
        ],
    }


def pending_answer(
    items: list[PendingLine], review_on: bool, arg: PendingArg, said: PendingSaid
) -> str:
    window = pending_window(items, arg.from_)
    if arg.json_:
        page = paging.json_page(window, _pending_dict)
        return paging.dumps(
            {
                "review": review_on,
                "waiting": len(items),
                "total": page.total,
                "shown": len(page.shown),
                "cut": page.cut,
                "pending": page.shown,
                "rest": _pending_rest(window, page),
                **pending_said_json(said),
            }
        )
    damaged = pending_lines_said(said)
    if not window:
        nothing = admin_text.nothing_waiting(review_on)
        return nothing if damaged is None else f"{nothing}\n{damaged}"
    page = paging.text_page(window, admin_text.pending_item)
    lines = list(page.shown)
    if damaged is not None:
        lines.append(damaged)
    rest = _pending_rest(window, page)
    if rest is not None:
        lines.append(
            f"({len(items):,} edits are waiting for review; showing {len(page.shown):,}, "
            f"{window[0].id} to {window[len(page.shown) - 1].id}; "
            f"to see the rest: {rest})"
        )
    if page.cut:
        lines.append(f"({page.cut:,} edits were cut to {paging.ITEM_BYTES:,} bytes)")
    return "\n".join(lines)


def _pending_dict(item: PendingLine) -> dict:
    keys = ("id", "time", "session", "call", "action", "file", "taint", "untrusted", "args")
    return {k: getattr(item, k) for k in keys}


def _pending_rest(window: list[PendingLine], page: paging.Page) -> str | None:
    if page.complete:
        return None
    return f"bxctl memory pending --from {window[len(page.shown)].id}"
