"""The lines of an export after its header, as docs/export-schema-v1.json states them: an entry
(kind, file, text, provenance) or a note (kind, note, number, source, text, provenance), told apart
by kind, each with exactly its own fields. A module of its own so that the importer's shapes stand
beside each other, to be read against the schema's, apart from what the importer does with them
(importing.py); the import takes no line the schema refuses.
"""

from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class Provenance(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)
    file: Literal["memory.md", "user.md", "notes.md"]
    session: str | None
    edit: str | None
    time: str | None
    klass: Literal["public", "private", "secret"] = Field(alias="class")
    untrusted: bool

    def dump(self) -> dict:
        return {
            "file": self.file,
            "session": self.session,
            "edit": self.edit,
            "time": self.time,
            "class": self.klass,
            "untrusted": self.untrusted,
        }


class EntryItem(BaseModel):
    """An entry of memory.md or user.md, as export-schema-v1.json's entry: these fields and no
    other (a note's fields on an entry refuse the line, as the schema does)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    kind: Literal["entry"]
    file: Literal["memory.md", "user.md"]
    text: str
    provenance: Provenance
    # A note's fields, which an entry never has: read as none where both kinds are handled.
    note: ClassVar[None] = None
    source: ClassVar[None] = None


class NoteItem(BaseModel):
    """A note of notes.md, as export-schema-v1.json's note: no file (where it is now is
    provenance.file), a number from 0, and the file a moved or dropped note left (required of
    those two kinds: importing._problem)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    kind: Literal["note"]
    note: Literal["noted", "moved", "dropped"]
    number: Annotated[int, Field(ge=0)] | None = None
    source: Literal["memory.md", "user.md"] | None = None
    text: str
    provenance: Provenance
    file: ClassVar[None] = None  # an entry's field, which a note never has


# One line of an export after the header: an entry or a note, told apart by kind, each of its
# own shape (the schema's oneOf), so a line the schema refuses is never imported.
Item = EntryItem | NoteItem
_ITEM: TypeAdapter[Item] = TypeAdapter(Annotated[Item, Field(discriminator="kind")])


def item_of(raw: bytes) -> Item:
    """One item line, parsed; ValidationError (ValueError) when it is not of either shape."""
    return _ITEM.validate_json(raw)
