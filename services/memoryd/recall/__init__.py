"""A recall whole, over the index and the configured mode: search, tag each hit, render the
answer, label it, and log it in recalls/.
"""
