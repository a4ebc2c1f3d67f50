"""An import's provenance checked against this home's own journal before the item is routed.

An export's provenance says which edit wrote each item and with what label; the file is the
owner's, and may have been edited by hand or written by a tool. When the edit it names is in this
home's journal and wrote this very text, the journal is memoryd's own record of that write (spec
3: the record an owner reads when a memory looks wrong), and the item is imported with the
stricter of the two labels: an item the journal records as untrusted becomes an untrusted note,
as one that claims untrusted does; a higher class is kept. The line said of the item says so. An
item whose edit this journal does not hold, or holds as the write of another text (an export of
another home), is imported as it claims, as before.
"""

from memoryd.data.importing import Item
from memoryd.data.journalled import Label, because, strictest, writes
from memoryd.home import Home
from memoryd.journal import scan
from memoryd.journal.ids import EDIT_ID
from memoryd.journal.journal import Journal


class Claims:
    """This home's journal, read by edit id as an import asks (never read whole)."""

    def __init__(self, home: Home):
        self.home = home
        self.months = Journal(home).month_files()

    def check(self, item: Item) -> tuple[Item, str | None]:
        """(item with the stricter label, why) when this home's journal records the write of its
        text more strictly than its provenance claims; (item, None) otherwise."""
        p = item.provenance
        if p.edit is None or not EDIT_ID.match(p.edit):
            return item, None
        line = scan.line_with_id(self.home.edits / f"{p.edit[:7]}.jsonl", p.edit)
        if line is None:
            return item, None
        written = strictest(list(writes(line, item.text, self.months)))
        kind = "entry" if item.kind == "entry" else (item.note or "noted")
        claimed = Label(kind, p.klass, p.untrusted)
        if written is None or not claimed.laxer_than(written.label):
            return item, None
        strict = claimed.with_(written.label)
        labelled = {"klass": strict.klass, "untrusted": strict.untrusted}
        update: dict = {"provenance": p.model_copy(update=labelled)}
        if item.kind == "note":
            update["note"] = strict.kind
        why = "its provenance " + because(claimed, written, "this home's")
        return item.model_copy(update=update), why
