"""An import's note that is an entry of this home: the entry is its text, never copied as a note.

An entry of one home that another home made a note (it held the text from an untrusted session,
so the claim was raised and the entry became an untrusted note there) comes back, in that home's
export, as a noted note of the entry's session and time. It is this home's entry, not a new note:
added, recall would serve the text twice, once as identity and once as an untrusted note of a
session whose write this home's journal records as clean. So a noted note whose text is an entry
of memory.md or user.md here, of the session and minute of the journal line that brought that
entry in (an import's line: the session and time it came with), is skipped, and so is an entry
item marked untrusted or above max_class whose text is already in its file. The entry stays as
the journal brought it in; nothing untrusted is made trusted, since nothing is written. A note of
the same text by another session is another note, and is imported as any other.
"""

import json

from memoryd.data.importsame import SameKey, shown
from memoryd.data.journalled import Label, line_label
from memoryd.home import Home
from memoryd.journal.journal import EditLine, Journal
from memoryd.journal.linefile import parse_line
from memoryd.journal.mapfile import line_bytes, mapped
from proto.trim import trim


def entry_kept(file: str, incoming: Label) -> str:
    """What is said of an item whose text is already an entry of file here (an entry is its
    text): the entry stays as this home's journal brought it in; nothing is added beside it."""
    return (
        f"already in {file}; the export marks it {shown(incoming)}: the entry kept as this "
        "home's journal brought it in, and no note of it added"
    )


def entry_write(home: Home, months, file: str, text: str) -> tuple[str, str | None, str] | None:
    """(session, time, edit) of the last journal line that brought the entry text into file (an
    import's line: the session and time it came with); None when no line did."""
    wanted = json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8")
    to = f'"to": "{file}"'.encode()
    out = None
    for path in months:
        with mapped(path) as data:
            at = 0
            while (found := data.find(wanted, at)) != -1:
                first = data.rfind(b"\n", 0, found) + 1
                end = data.find(b"\n", found)
                end = len(data) if end == -1 else end
                at = end
                raw, cut = line_bytes(data, first, end)
                if cut or to not in raw:
                    continue
                record = parse_line(raw, EditLine)
                if isinstance(record, str) or record.to != file or record.action == "undo":
                    continue
                before = {trim(e) for e in record.before}
                if not any(trim(e) == text and text not in before for e in record.after):
                    continue
                session, _ = line_label(record, "entry")
                imported = record.imported if record.action == "import" else None
                time = imported.get("time") if isinstance(imported, dict) else record.time
                out = (session or "owner", time if isinstance(time, str) else None, record.id)
    return out


def entry_note(home: Home, entries: dict[str, list[str]], key: SameKey) -> tuple[str, str] | None:
    """(file, edit) when the noted note key names is an entry here: its text is an entry of
    memory.md or user.md that the note's session brought in at the note's minute (an entry of
    one home that another home made a note, brought back); None otherwise."""
    kind, text, time, session, _ = key
    if kind != "noted":
        return None
    for file, current in entries.items():
        if not any(trim(e) == text for e in current):
            continue
        write = entry_write(home, Journal(home).month_files(), file, text)
        if write is None or write[0] != session:
            continue
        if time is None or write[1] is None or write[1][:16] == time[:16]:
            return file, write[2]
    return None
