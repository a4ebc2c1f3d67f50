"""The owner's data: backup and restore of memoryd's files, export and import with provenance,
and forget. Each is an owner command (owner/dispatch.py) that changes memory/ only on the writer
thread, and only for as long as a copy or a rename takes."""
