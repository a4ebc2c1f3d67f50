"""bxctl: the owner's command line for boxmaker's memory (spec 10)."""
