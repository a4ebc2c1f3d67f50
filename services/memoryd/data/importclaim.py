"""An import's provenance checked against this home's own records before the item is routed.

An export's provenance says which edit wrote each item and with what label; the file is the
owner's, and may have been edited by hand or written by a tool. The item is imported with the
strictest of its claim and of what this home recorded (spec 3: the journal is the record an owner
reads when a memory looks wrong):

- the edit it names, when this home's journal holds it and it wrote this very text: the label
  memoryd gave that write;
- every note of notes.md with the same text, and every journal line that wrote it
  (importfloor.py): a claim whose edit id was blanked or changed still meets them;
- when the edit it names is not a write of its text here (blanked, unknown, another text), the
  label this home's journal holds for the session it names (journallabels.py): what a session of
  this home wrote after it read untrusted content is untrusted, whatever the file says of it.

So an item this home recorded as untrusted becomes an untrusted note, as one that claims untrusted
does, and a higher class is kept; the line said of the item names each record that made it
stricter. An item of another home's export (its session unknown here, its text never written
here) is imported as it claims.
"""

from collections.abc import Iterable

from memoryd.data.importfloor import Floor
from memoryd.data.importitems import Item
from memoryd.data.importnamed import Named
from memoryd.data.journalled import Label, describe, strictest, writes
from memoryd.home import Home
from memoryd.index import journallabels
from memoryd.journal.idform import EDIT_ID
from memoryd.journal.journal import Journal


class Claims:
    """This home's records of an import's texts: the journal lines of the edits it names
    (importnamed.Named: the ids it names given when made; another edit is not looked up), and
    the notes and journal writes of the import's texts (importfloor.Floor)."""

    def __init__(self, home: Home, texts: Iterable[str], edits: Iterable[str | None] = ()):
        self.home = home
        self.months = Journal(home).month_files()
        self.floor = Floor.of(home, texts)
        # edits may be filled as texts is read (one pass over the file): taken after it
        self.named = Named(home, {edit for edit in edits if edit is not None})

    def refresh(self) -> None:
        """The journal and notes.md as they are now (other writes come between batches)."""
        self.months = Journal(self.home).month_files()
        self.floor.refresh()
        self.named.refresh()

    def check(self, item: Item) -> tuple[Item, str | None]:
        """(item with the stricter label, why) when this home records its text or session more
        strictly than its provenance claims; (item, None) otherwise."""
        p = item.provenance
        kind = "entry" if item.kind == "entry" else (item.note or "noted")
        claimed = Label(kind, p.klass, p.untrusted)
        found: list[tuple[Label, str]] = []
        named = self._named(item)
        if named is not None:
            found.append(named)
        found += [(f.label, f.said) for f in self.floor.found(item.text)]
        if named is None and p.session is not None:
            session = journallabels.label(self.home, p.session)
            if session is not None:
                label = Label("entry", session[0], session[1])
                found.append((label, f"this home's journal records session {p.session}"))
        strict, why = claimed, list[str]()
        for label, said in found:
            if claimed.laxer_than(label) and f"{said} as " not in "; ".join(why):
                strict = strict.with_(label)
                why.append(f"{said} as {describe(label, claimed)}")
        if strict == claimed:
            return item, None
        labelled = {"klass": strict.klass, "untrusted": strict.untrusted}
        update: dict = {"provenance": p.model_copy(update=labelled)}
        if item.kind == "note":
            update["note"] = strict.kind
        said = f"its provenance claims {describe(claimed, strict)}, but " + "; ".join(why)
        return item.model_copy(update=update), said

    def _named(self, item: Item) -> tuple[Label, str] | None:
        """The label this home's journal gave the write of the item's text by the edit its
        provenance names; None when that edit is not here or wrote another text."""
        edit = item.provenance.edit
        if edit is None or not EDIT_ID.match(edit):
            return None
        line = self.named.line(edit)
        if line is None:
            return None
        written = strictest(list(writes(line, item.text, self.months)))
        if written is None:
            return None
        by = f" of session {written.session}" if written.session else ""
        return written.label, f"this home's journal records edit {written.edit}{by}"
