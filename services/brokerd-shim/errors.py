"""The errors of brokerd-shim: one base, a subclass for each kind of failure.

The text of a BrokerError is written for whoever sees it (loopd-shim, the owner starting the
service) and is sent or printed as it is. Anything else is a bug: logged with its traceback and
answered with "internal error".
"""


class BrokerError(Exception):
    """Base of every error brokerd-shim answers or prints with its text."""


class StartFailed(BrokerError):
    """brokerd-shim cannot start: configuration, home or socket unusable."""


class ConfigError(StartFailed):
    """brokerd.toml is missing, unreadable or invalid."""


class GrantProblem(BrokerError):
    """One grant file that cannot be part of the set; the whole set is then invalid."""


class LedgerFailed(BrokerError):
    """A session's state cannot be read or written; the call's result is withheld."""


class AuditFailed(BrokerError):
    """The audit line of a decision cannot be written; the call is refused before it runs."""


class ToolFailed(BrokerError):
    """A runtime could not produce a tool's output; the text is the answer's output."""


class Stopping(BrokerError):
    """brokerd-shim is stopping: a call that arrived too late is not run or recorded."""
