"""The owner's commands (log, pending, show, search, stats, promote, edit, and the way to undo,
accept and reject, which memory/ownerwrites.py carries out), and the paging that keeps every
owner answer under one frame.

Each command is a module with pure functions that decide and a thin function that reads; the table
in dispatch.py says which run on the writer thread and which on a reader.
"""
