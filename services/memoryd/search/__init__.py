"""The query and the spec's ranking, below every mode and the index: the quoted-terms FTS5 query,
a hit and its header, the snippet cut from a record, the defusing that keeps a snippet from passing
for a header, bm25's formula, the index's table definitions, and the exact top k of the spec's
query found without scoring every match (term counts cached per index generation, which memoryd's
own commits write).
"""
