"""Which session logs the catch-up after a start may count as read without a writer job: those
the index has read to their end as they are now (the same file, as long as the offset read).

Otherwise every log is a writer job of its own after a restart (its progress read, its tail
hashed, the log opened past its offset, a transaction begun and rolled back) though none gained
anything: seconds for tens of thousands of logs, all that time recall saying the index is
catching up, a cost that grows with every session there ever was rather than with what is new.
Here one query reads every log's offset and file, and a stat of each log tells the ones with
nothing new. Every other log goes to the writer as before: one that grew has its
tail hash checked there, one that is another file, shorter, a link or a FIFO is read again or
skipped there, with its label kept and the forgotten records left out (indexer.py). So does a
log whose progress an earlier memoryd kept without a digest of the bytes read, once: the writer
takes it (one read of the log), so that a home copied later is read on (logprefix.py).

A log rewritten in place to the very same size looks unchanged here, as it does to the spec's
offsets: its tail hash is checked when it next grows (its session's next turn), and a reindex
reads it whole.
"""

import os
import stat

from memoryd.errors import IndexDamaged, IndexUnwritable
from memoryd.index import indexer

# Every log read: its offset and the tail column (the hash, then the file read: indexer.save_state).
READ = "SELECT o.log, o.bytes, o.tail FROM offsets o JOIN progress p ON p.log = o.log"


def unchanged(index, sessions: list[str]) -> set[str]:
    """The sessions among sessions whose log the index has read to its end as it is now (a read:
    any thread). None when the index cannot be read now: the writer then tries every log."""
    try:
        with index.reader() as conn:
            held = conn.execute(READ).fetchall()
    except (IndexDamaged, IndexUnwritable):
        return set()
    read: dict[str, tuple[int, str]] = {}
    for name, size, tail in held:
        # The file read follows the hash, and the digest of the bytes read follows it (indexer
        # .save_state); a log kept without either (an older index) goes to the writer, which
        # keeps them once (so that a home copied later is read on: logprefix.py).
        file, _, digest = str(tail).partition(" ")[2].partition(" ")
        if file and digest and isinstance(size, int):
            read[name] = (size, file)
    # One stat a log, by a path made as text: at tens of thousands of logs, Path objects and a
    # stat of each folder too would double the cost. The folder was checked by the listing the
    # sessions come from (newindex.indexable_sessions: no link at sessions/<id>).
    folder = str(index.home.sessions)
    found = set()
    for session in sessions:
        was = read.get(indexer.log_name(session))
        if was is None:
            continue
        try:
            log = os.stat(f"{folder}/{session}/0.jsonl", follow_symlinks=False)
        except OSError:
            continue  # gone or out of reach: the writer says which
        # The file as indexer.file_of names it.
        if stat.S_ISREG(log.st_mode) and (log.st_size, f"{log.st_dev}:{log.st_ino}") == was:
            found.add(session)
    return found
