"""What a connection starts from: its client's kept state, or memoryd's logs if none is.

A client's raised state is kept in one file outside {home} (raised.py), in a folder that a cleaner
emptying ~/.local/state, a mistaken rm or a new $XDG_STATE_HOME takes away with no word. A client
registered trusted whose file is gone would start as registered while its conversation still
holds the untrusted text, and write it into memory.md. brokerd-shim meets a lost ledger record the
same way: a second record that does not vanish with the first (its audit log) says the session
was answered before, and it fails closed. memory-mcp's second record is memoryd's recall log in
the home (recalled.py), which names the session each recall answered and each hit's tag. The
owner may remove its months (it has no size limit), so the edit journal (journalled.py) is read
too when the recall log shows nothing: a write of one of the client's sessions journalled as
untrusted counts as a tainted hit, and a recall log with no month at all although the journal
names one of the client's sessions was removed, so its silence counts for nothing (look).

So a client registered trusted with no kept file is not trusted until those logs are read: what
they show makes the connection start untrusted, with one log line saying why, and the raised
state is kept again. Logs that show nothing are kept as a clean record (raised.CLEAN), so they
are read whole at a client's first connection and after its file is lost, never at every
connection; `memory-mcp trust-again` writes the same record, so what they show from before it no
longer counts. A client registered untrusted has nothing to learn from them (a hit's class is not
in the log, so a secret answer is not recovered).

The log is read on a daemon thread as the session's id is fixed, and a tool call waits for it
before it is sent, at most --timeout from the start: a read that does not end by then, or that
fails, makes the connection start untrusted (the thread goes on, and keeps what it finds for the
next connection). Keeping the outcome tries the folder's lock once and never waits for it (another
memory-mcp holds it): the next connection then reads the log again.

A file an earlier version kept (named by the home as typed, keptfiles.py) is read as the
connection starts and carried over (adopt); a clean record of that naming is not, since it could
not see a registration that spelled the home another way, so such a client's log is read once.
"""

import asyncio
import logging
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from memory_mcp import journalled, raised, recalled
from memory_mcp.keptfiles import KeptFiles, kept_files
from proto.labels import Label, stricter

log = logging.getLogger("memory_mcp.startstate")


def take(
    folder: Path, home: Path, client: str, session: str, declared: Label, timeout: float
) -> tuple[KeptFiles, Label | None, "RecallCheck | None"]:
    """The client's kept files (one home, however it is spelled: keptfiles.py), the label its
    kept state raises this connection to (None: none), and the read of the recall log the
    connection's calls wait for, when one is needed."""
    kept = kept_files(folder, home, client)
    uncarried = adopt(kept, time.monotonic())  # the lock tried once: this runs on the event loop
    found = raised.load_all(kept.names)
    if found is not None and not raised.past(declared, found.label) and _only_by_folder(kept):
        # A clean record kept under the folder's device and inode alone: that folder may be gone
        # and its inode given to this home since (ext4 hands a freed one out at once), so it
        # says nothing of this home's clients; the recall log does. A raised one still counts.
        found = None
    if uncarried is not None and (
        found is None or stricter(found.label, uncarried.label) != found.label
    ):
        found = uncarried
    found = found or raised.unkeepable(kept.primary, declared)
    if found is None:
        if declared.untrusted:
            return kept, None, None
        return kept, None, RecallCheck(home, kept, client, session, declared, timeout)
    if found.session == raised.UNKEPT or not raised.past(declared, found.label):
        return kept, found.label, None  # unkeepable said it; a clean record raises nothing
    log.warning(
        "session %s: client %s read untrusted or secret memory in session %s (%s), so this "
        "connection starts %s%s; `memory-mcp trust-again --client %s` once its conversations "
        "that saw it are gone",
        session,
        client,
        found.session,
        found.since,
        found.label.klass,
        ", untrusted" if found.label.untrusted else "",
        client,
    )
    return kept, found.label, None


def _only_by_folder(kept: KeptFiles) -> bool:
    """Whether the home's real path names no kept file (so what was found is the folder's)."""
    return not kept.primary.exists()


def adopt(kept: KeptFiles, deadline: float) -> raised.Raised | None:
    """An earlier version's file for this home (keptfiles.py): a raised state carried over to the
    home's names, unless the owner's trust-again since cleared it, and the file removed; a clean
    record removed and not carried (it could not see the client's other spellings: the recall log
    is read instead). What could not be carried (the folder locked or not writable) is returned,
    to count for this connection all the same; None otherwise."""
    found = raised.load_all([path for path in kept.legacy if path.exists()])
    if found is None:
        return None
    carry = found.label != raised.CLEAN
    try:
        with raised.held(kept.folder, deadline):
            now = raised.load_all(kept.names)
            cleared = (
                now is not None
                and now.session == raised.TRUSTED_AGAIN
                and found.since[:1].isdigit()
                and now.since >= found.since
            )
            if carry and not cleared:
                raised.raise_locked(kept.names, found.label, found.session)
            for path in kept.legacy:
                path.unlink(missing_ok=True)
    except OSError as e:
        log.warning("%s: cannot carry a kept state over (%s): read as it is", kept.folder, e)
        return found if carry else None
    log.info(
        "%s: the kept state of an earlier version (%s%s, session %s) %s",
        kept.folder,
        found.label.klass,
        ", untrusted" if found.label.untrusted else "",
        found.session,
        f"carried over to {kept.primary}" if carry and not cleared else "removed",
    )
    return None


class RecallCheck:
    """One connection's read of the recall log for its client, which has no kept state."""

    def __init__(
        self,
        home: Path,
        kept: KeptFiles,
        client: str,
        session: str,
        declared: Label,
        timeout: float,
    ) -> None:
        self.home, self.kept, self.client, self.session = home, kept, client, session
        self.declared = declared
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.waiting = 0  # calls waiting for the read: work under way (stdio's busy)
        self.outcome: Label | None = None  # once settled: what the connection starts from
        self._read: Future[Seen | None] = Future()
        self._read.set_running_or_notify_cancel()  # a wait that times out cannot cancel it
        try:
            threading.Thread(target=self._work, name="recall-log", daemon=True).start()
        except RuntimeError as e:  # out of threads: the read is failed, and so fails closed
            self._read.set_exception(e)

    async def label(self) -> Label:
        """The label this connection starts from: the declared one, or untrusted."""
        if self.outcome is not None:
            return self.outcome
        self.waiting += 1
        try:
            left = max(0.0, self.deadline - time.monotonic())
            seen = await asyncio.wait_for(asyncio.wrap_future(self._read), left)
        except TimeoutError:
            return self._settle(
                None, f"logs cannot be read (it took longer than {self.timeout:g} seconds)"
            )
        except recalled.RecallLogUnreadable as e:
            return self._settle(None, f"recall log cannot be read ({e})")
        except journalled.JournalUnreadable as e:
            return self._settle(None, f"edit journal cannot be read ({e})")
        except Exception as e:  # unforeseen (no thread): failing closed all the same
            return self._settle(None, f"logs cannot be read ({type(e).__name__}: {e})")
        finally:
            self.waiting -= 1
        return self._settle(seen, None)

    def _settle(self, seen: "Seen | None", why: str | None) -> Label:
        if self.outcome is not None:  # another call settled it while this one waited
            return self.outcome
        untrusted = Label(klass=self.declared.klass, untrusted=True)
        if why is not None:
            log.warning(
                "session %s: client %s has no kept state in %s and memoryd's %s to find "
                "whether it was given untrusted memory, so this connection starts untrusted",
                self.session,
                self.client,
                self.kept.folder,
                why,
            )
            self.outcome = untrusted
        elif seen is not None:
            log.warning(
                "session %s: client %s has no kept state in %s (removed?), but %s, so this "
                "connection starts untrusted; `memory-mcp trust-again --client %s` once its "
                "conversations that saw it are gone (a trust-again said since then was kept "
                "there too, and is lost with it)",
                self.session,
                self.client,
                self.kept.folder,
                seen.said,
                self.client,
            )
            self.outcome = untrusted
        else:
            log.info(
                "session %s: client %s has no kept state; memoryd's recall log shows none of its "
                "sessions given memory-tainted text, nor its edit journal one writing as untrusted",
                self.session,
                self.client,
            )
            self.outcome = self.declared
        return self.outcome

    def _work(self) -> None:
        try:
            seen = look(self.home, self.client)
        except BaseException as e:  # handed to the waiting calls, which fail closed on it
            self._read.set_exception(e)
            return
        self._read.set_result(seen)
        if seen is None:
            label, session = raised.CLEAN, raised.NONE_SEEN
        else:
            label, session = Label(klass=self.declared.klass, untrusted=True), seen.session
        try:  # the lock tried once, never waited for: another memory-mcp may hold it stalled
            raised.raise_kept(self.kept.names, label, session, deadline=time.monotonic())
        except OSError as e:
            log.info(
                "session %s: what memoryd's recall log shows of client %s is not kept in %s "
                "(%s); its next connection reads the log again",
                self.session,
                self.client,
                self.kept.folder,
                e.strerror or e,
            )


@dataclass(frozen=True)
class Seen:
    """What memoryd's records show that makes a client's connection start untrusted: the session
    to keep as the reason, and the log line's words for it."""

    session: str
    said: str


def look(home: Path, client: str) -> Seen | None:
    """The recall log's newest tainted recall of the client's sessions; failing that, the edit
    journal's newest untrusted write of one (the recall log's months may have been removed); and
    a recall log with no month at all although the journal names one of the client's sessions
    (removed, so its silence says nothing). None: neither shows anything."""
    given = recalled.newest_tainted(home, client)
    if given is not None:
        return Seen(
            given.session,
            f"memoryd's recall log shows its session {given.session} was given memory-tainted "
            f"text at {given.time}",
        )
    months = recalled.has_month(home)
    written = journalled.newest_untrusted(home, client, named_enough=not months)
    if written.untrusted is not None:
        return Seen(
            written.untrusted.session,
            f"memoryd's edit journal shows its session {written.untrusted.session} wrote as "
            f"untrusted at {written.untrusted.time}",
        )
    if written.named is not None and not months:
        return Seen(
            written.named,
            f"memoryd's recall log ({recalled.folder(home)}) holds no month although its edit "
            f"journal names its session {written.named}: the log was removed, so whether the "
            "client was given memory-tainted text is unknown",
        )
    return None
