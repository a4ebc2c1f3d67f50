"""The errors of memoryd: one base, a subclass for each kind of refusal.

The text of a MemorydError is written for whoever asked (the model, the owner, loopd) and is sent
as it is. Anything that is not a MemorydError is a bug: logged with its traceback, answered with
"internal error".
"""

from proto.files import NotRegular, TooLarge


class MemorydError(Exception):
    """Base of every error memoryd answers with its text."""


class StartFailed(MemorydError):
    """memoryd cannot start (runbook: memoryd-start-failed)."""


class ConfigError(StartFailed):
    """The configuration file is missing, unreadable or invalid."""


class EditRefused(MemorydError):
    """A memory write that its rules refuse; no file changed."""


class CheckFailed(EditRefused):
    """An entry fails the check (spec 5): the text names the rule."""


class WriteFailed(EditRefused):
    """A write the disk refused (full, read-only): every step already taken was taken back, so
    no memory file changed; the text says so."""


class WriteNotTakenBack(WriteFailed):
    """A write the disk refused whose take-back it refused too: the file the text names may hold
    the change, and the text says what becomes of it (memory/untaken.py)."""


class UntrustedSession(EditRefused):
    """An identity action other than add from a session that has read untrusted content."""


class FileDamaged(MemorydError):
    """A memory file cannot be read or parsed as it is on disk (edited by hand)."""


class ForgottenUnreadable(FileDamaged, OSError):
    """memory/forgotten.jsonl is there but cannot be read (permissions, an I/O error): what the
    owner made memoryd forget is not known, so recall and indexing wait rather than risk finding
    it. An OSError too, so that the catch-up tries the session again once it is mended."""

    def __init__(self, error: OSError, where: str):
        super().__init__(error.errno, error.strerror or str(error), where)
        # As the catch-up names a file's trouble: a link or a FIFO in its own words.
        plain = isinstance(error, NotRegular | TooLarge) or error.strerror is None
        self.short = str(error) if plain else f"{where}: {self.strerror}"
        self.said = str(error) if plain else f"{where} cannot be read ({self.strerror})"

    def __str__(self) -> str:
        return (
            f"{self.said}: what the owner made memoryd forget is not known, so recall and "
            "indexing wait until it can be; give it back to memoryd's user (mode 600)"
        )


class BlockRefused(MemorydError):
    """The memory block cannot be served (runbook: memory-unavailable)."""


class AdminRefused(MemorydError):
    """A bxctl memory command that cannot be carried out (unknown id, not the latest edit...)."""


class IndexDamaged(MemorydError):
    """The index cannot be opened or read (runbook: memory-index-damaged)."""


class IndexUnwritable(MemorydError):
    """The index cannot take a change now (the disk is full, an I/O error, the file read-only or
    locked): nothing in it is damaged or lost, and what was not indexed is indexed once the
    cause is gone (the catch-up tries again), so it is never a reason to rebuild it."""


class SessionUnknown(MemorydError):
    """session_updated for a session with no log under sessions/."""


class MalformedCall(EditRefused):
    """A memory call whose arguments or session state do not have the right shape."""


class FileInvalid(EditRefused):
    """An edit refused because its file, as the owner left it, cannot be edited: unreadable,
    missing, or holding the same entry twice."""


class SessionNotIndexed(MemorydError):
    """A session's new records cannot be indexed now for a reason of a file (its log memoryd may
    not read, an I/O error, memory/forgotten.jsonl not a file): the catch-up indexes them once
    that is mended, and the answer says so in one line."""


class NotesUnreadable(MemorydError, OSError):
    """memory/notes.md is there but cannot be read now (its mode, its owner, an I/O error): the
    index keeps the notes it holds and how far it read, and reads on once notes.md can be read.
    An OSError too, so that every caller that took the read's own error still does."""

    def __init__(self, error: OSError, path: object):
        super().__init__(error.errno, error.strerror or str(error), str(path))

    def __str__(self) -> str:
        return (
            f"{self.filename} cannot be read now ({self.strerror}); its notes stay indexed as"
            " they were"
        )


class RebuildFailed(MemorydError):
    """The process building a new index (index/rebuild.py) did not finish it."""


class NotSynced(MemorydError):
    """The new index was renamed into place and is in use, but its folder's fsync failed
    (index/swap.py): the reindex is answered so, in one line."""
