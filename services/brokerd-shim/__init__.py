"""brokerd-shim: stands in for brokerd as spec 8 changes it (design section 4).

It decides each tool call loopd-shim sends under a grant (two built in, for recall and memory, and
the owner's from grants/), keeps each session's state (highest class seen, untrusted seen) durably
under ledger/, runs a decided call on a composite runtime (memoryd for recall and memory, stored
fixtures for everything else), answers with the stricter of the grant's and the runtime's label,
and appends one audit line per decision.
"""
