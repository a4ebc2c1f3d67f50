"""Recall's text functions, pure: the quoted-terms FTS5 query, a hit and its header, the snippet
cut from a record, the defusing that keeps a snippet from passing for a header, and bm25's
formula. No index and no I/O here, so every recall mode can use them.
"""
