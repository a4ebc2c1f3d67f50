"""The record of what happened: the edit journal (edits/YYYY-MM.jsonl), its scans, its index by
file, the recall log's line model, and the JSON-lines files they are kept in. Appended with fsync
and taken back whole when a write fails part way; nothing here decides what a write does.
"""
