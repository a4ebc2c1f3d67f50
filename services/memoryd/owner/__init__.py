"""The owner's commands beyond log/undo/pending/accept/reject, and the paging that keeps
every owner answer under one frame.

Each command is a module with pure functions that decide and a thin function that reads; the table
in dispatch.py says which run on the writer thread and which on a reader.
"""
