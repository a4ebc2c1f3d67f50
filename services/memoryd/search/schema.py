"""The index file's tables: the spec's three (hits, sources, progress) and memoryd's own beside
them. Kept here, below the index, because the term counts (vocab.py) and the generation record
(generation.py) read the same tables the indexer writes.
"""

SCHEMA = (
    "CREATE VIRTUAL TABLE hits USING fts5(text, tokenize = 'unicode61')",
    "CREATE TABLE sources (rowid INTEGER PRIMARY KEY, kind TEXT, session TEXT, epoch INTEGER,"
    " record INTEGER, time TEXT, role TEXT, class TEXT, untrusted INTEGER)",
    "CREATE TABLE progress (log TEXT PRIMARY KEY, records INTEGER)",
    "CREATE TABLE offsets (log TEXT PRIMARY KEY, bytes INTEGER, class TEXT, untrusted INTEGER,"
    " tail TEXT)",
    "CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT)",
    # The record of memoryd's last commit (generation.py).
    "CREATE TABLE generation (id INTEGER PRIMARY KEY, lineage TEXT, serial INTEGER,"
    " averages BLOB, structure BLOB)",
    # The common terms' row counts, taken when the file was built (generation.py).
    "CREATE TABLE term_counts (term TEXT PRIMARY KEY, docs INTEGER, lineage TEXT, since INTEGER)",
)
TABLES = ("hits", "sources", "progress", "offsets", "settings", "generation", "term_counts")
# An index made before settings were stamped has no settings table; it is not damaged, only
# built with unknown settings (index.py rebuilds it). One made before the generation record has
# neither of the last two: memoryd's first transaction writes the record, and recall counts terms
# as it meets them.
OPTIONAL_TABLES = ("settings", "generation", "term_counts")

# The file's count of deletions (the header's user_version), raised in the transaction that
# deletes rows: the transaction's generation record then starts a new lineage, so that no reader
# carries its term counts past a deletion (generation.py, vocab.py).
DELETIONS_PRAGMA = "user_version"
