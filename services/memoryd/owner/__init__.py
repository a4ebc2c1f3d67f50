"""The owner's commands beyond log/undo/pending/accept/reject (issue 17), and the paging that keeps
every owner answer under one frame (issue 13 item 2).

Each command is a module with pure functions that decide and a thin function that reads; the table
in dispatch.py says which run on the writer thread and which on a reader.
"""
