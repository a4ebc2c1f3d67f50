"""notes.md's entries as the index's rows: those the index's class keeps, each capped.

A note of a class above the index's (a secret note in a private index) has no row; a forgotten
note's text is the marker, nothing to recall; a note past max_record_bytes is indexed from its
first bytes, said in memoryd's log naming the file and the entry.
"""

import logging
from pathlib import Path

from memoryd.index.settings import Settings, cap_text
from memoryd.journal import forgottenmarker
from memoryd.memory import notes
from proto.labels import CLASS_RANK

# Logged under the indexer's name, as before notes.md's reading had modules of its own.
log = logging.getLogger("memoryd.index.indexer")


def rows(path: Path, entries: list[notes.NoteEntry], settings: Settings) -> list[tuple]:
    """The rows of entries (of notes.md at path) the index holds."""
    limit = CLASS_RANK[settings.max_class]
    rows = []
    for e in entries:
        # A forgotten note's text is the marker: nothing to recall. Whether forgotten.jsonl
        # lists its number is not asked: a hand edit of notes.md may have renumbered the notes,
        # and the number listed may now be a live note's, which was never forgotten.
        if not e.text or CLASS_RANK[e.klass] > limit or forgottenmarker.is_marker(e.text):
            continue
        capped = cap_text(e.text, settings.max_record_bytes)
        if capped is not None:
            log.info(
                "notes %s: entry %d: indexed its first %d bytes",
                path,
                e.number,
                settings.max_record_bytes,
            )
        text = e.text if capped is None else capped
        rows.append(
            (e.kind, e.session, 0, e.number, e.time, e.source, e.klass, int(e.untrusted), text)
        )
    return rows
