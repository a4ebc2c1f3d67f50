def defuse(t):
    from memoryd.query import defuse as d
    return d(t)
HEADER_START=__import__("re").compile(r"\[\s*\d+\s*\]")
def escape_controls(t): return t
