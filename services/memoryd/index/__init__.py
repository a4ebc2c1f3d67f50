"""The full-text index {home}/index/memory.sqlite3: its file and settings, the rows read from
session logs and notes.md, catching up, and a reindex's build in a child process. Derived data:
every table here can be built again from sessions/ and notes.md.
"""
