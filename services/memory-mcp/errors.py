"""The errors of memory-mcp: one base, a subclass for each thing that can go wrong.

The text of a MemoryMcpError is written for whoever sees it (the MCP client's model, or the owner
starting the server) and is shown as it is. It never carries a traceback.
"""


class MemoryMcpError(Exception):
    """Base of every error memory-mcp answers or prints with its text."""


class MemorydUnreachable(MemoryMcpError):
    """memoryd did not answer (down, not started, or slower than the timeout)."""


class MemorydBusy(MemoryMcpError):
    """As many calls as memory-mcp lets be with memoryd at once already are: this one not sent."""


class MemorydUncertain(MemoryMcpError):
    """A write was sent to memoryd and no answer came: it may have been applied."""


class MemorydRefused(MemoryMcpError):
    """memoryd answered with an error message, or with a kind it should not have."""


class BlockUnavailable(MemoryMcpError):
    """The memory block cannot be built from {home}/memory/ (runbook: memory-unavailable)."""


class StartFailed(MemoryMcpError):
    """memory-mcp cannot start: an option is invalid or the SDK is missing."""
