"""Recall over the index: the exact top k of the spec's bm25 query found without scoring every
match (term counts cached per index generation), each hit tagged, the answer rendered, labelled
and logged.
"""
