"""loopd-shim: stands in for loopd (spec 9) so memoryd meets the real protocol end to end.

It starts sessions (the memory block from memoryd, frozen into the saved baseline), declares the
core tools, appends the session log, sends tool calls to brokerd-shim, and tells memoryd after a
finished turn. The model is played by whoever talks to its control socket (the driver in cli.py).
"""
