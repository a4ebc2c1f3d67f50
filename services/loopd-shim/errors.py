"""The errors of loopd-shim: one base, a subclass for each refusal a caller can read.

The text of a LoopdError is written for whoever plays the model (or the owner at the driver) and
is sent as it is. Anything else is a bug: logged with its traceback, answered "internal error".
"""

MEMORY_UNAVAILABLE = (
    "memory is unavailable, so the session was not started: {error} (runbook: memory-unavailable)"
)


class LoopdError(Exception):
    """Base of every error loopd-shim answers with its text."""


class ConfigError(LoopdError):
    """loopd.toml or the system prompt is missing, unreadable or invalid."""


class StartFailed(LoopdError):
    """loopd-shim serve cannot start: its home or its control socket cannot be made."""


class MemoryUnavailable(LoopdError):
    """memoryd did not serve the memory block: the session is not started."""

    def __init__(self, error: str):
        super().__init__(MEMORY_UNAVAILABLE.format(error=error))
        self.error = error


class SessionExists(LoopdError):
    """session_start for a session whose folder already exists."""


class SessionNameRefused(LoopdError):
    """session_start naming an id no session may have (service.RESERVED_SESSIONS)."""


class SessionUnknown(LoopdError):
    """A message for a session that was never started."""


class SessionLogFailed(LoopdError):
    """A session's files cannot be read or written (a link or a FIFO there, a full disk)."""


class AppendFailed(SessionLogFailed):
    """A record the session log could not take; reason is the few words of why (its errno's)."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


class TurnRefused(LoopdError):
    """An assistant message that cannot be a turn (empty, duplicate call ids)."""


class TooManySessions(LoopdError):
    """session_start while [sessions] max_open sessions are open (opensessions.py)."""
