"""The memory files under {home}/memory/ and the one place that changes them: entries, the write
check, the pure plan of an edit, notes.md, review, undo and the owner's other writes that name an
edit, hand edits, and the memory block built from them for a session's prompt.
"""
