"""Who is asking, and what they may change: the caller of a write, memoryd's own witness of a
session's taint (its log), and the rule that a class above [index] max_class is taint too. Every
identity write is routed by what this package says.
"""
