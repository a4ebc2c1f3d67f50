"""The ledger: each session's state, kept durably so a restart cannot make a tainted session clean.

A session's state is the highest class of any result it has been given (at least private) and
whether any was untrusted. It lives in {home}/ledger/<session>.json as {"session", "class",
"untrusted"}, replaced atomically every time it changes, before the result that changed it is
answered. A file that cannot be read or parsed is taken as the strictest state (secret, untrusted)
and logged: failing closed is the point of the ledger.

The record is created, clean, the first time the shim sees a session, before that first call is
answered and audited. A session the audit log has answered before but with no record either had
its record deleted (ledger/<session>.json, or all of ledger/) or was served by a release that wrote
a record only when a session was raised: its state is the strictest label its answered audit lines
hold (auditlabels.py), said in one line, and written back. When those lines cannot tell it (one is
damaged, an allowed call has no outcome line, the log cannot be read) it is secret, untrusted.
Only a session the audit log has never answered starts clean. (Deleting the audit log as well is
caught by memoryd, which reads the session's own log before routing a memory call.)
"""

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from brokerd_shim.auditlabels import answered_labels
from brokerd_shim.errors import LedgerFailed
from proto.files import atomic_write, ensure_dir, open_read
from proto.labels import CLASS_RANK, DataClass, Label, stricter
from proto.messages import is_session_id

log = logging.getLogger("brokerd_shim.ledger")

CLEAN = Label(klass="private", untrusted=False)
STRICTEST = Label(klass="secret", untrusted=True)
# A record is under 200 bytes; a larger file is damaged, and is not read further.
RECORD_BYTES = 4096


@dataclass(frozen=True)
class SessionState:
    session: str
    label: Label

    @property
    def klass(self) -> DataClass:
        return self.label.klass

    @property
    def untrusted(self) -> bool:
        return self.label.untrusted


def _parse(session: str, data: bytes) -> Label:
    record = json.loads(data)
    if (
        not isinstance(record, dict)
        or set(record) != {"session", "class", "untrusted"}
        or record["session"] != session
        or record["class"] not in CLASS_RANK
        or not isinstance(record["untrusted"], bool)
    ):
        raise ValueError("not a ledger record")
    return Label(klass=record["class"], untrusted=record["untrusted"])


class Ledger:
    """Session states under one folder, cached in memory, written through on every change."""

    def __init__(
        self,
        folder: Path,
        answered: set[str] | frozenset[str] = frozenset(),
        audit: Path | None = None,
    ):
        """answered: the sessions the audit log holds a line for (audit.sessions_answered);
        audit: its folder, by default the home's audit/ beside ledger/."""
        self.folder = folder
        self.answered = answered
        self.audit = audit if audit is not None else folder.parent / "audit"
        self._cache: dict[str, Label] = {}
        # The audit log's labels of the answered sessions with no record, read at the first need.
        self._audited: dict[str, tuple[Label | None, str]] | None = None

    def _path(self, session: str) -> Path:
        if not is_session_id(session):
            raise LedgerFailed("not a session id")
        return self.folder / f"{session}.json"

    def state(self, session: str) -> SessionState:
        """The session's state as recorded now."""
        label = self._cache.get(session)
        if label is None:
            label = self._load(session)
            self._cache[session] = label
        return SessionState(session, label)

    def _load(self, session: str) -> Label:
        path = self._path(session)
        try:
            # Never through a link, never waiting on a FIFO: this runs on the one writer thread,
            # so a read that waits would hold every session's calls, not only this one's.
            with open_read(path) as f:
                data = f.read(RECORD_BYTES + 1)
        except FileNotFoundError:
            return self._create(session, path)
        except OSError as e:
            log.error(
                "ledger: %s cannot be read (%s); session %s taken as secret, untrusted",
                path,
                e.strerror,
                session,
            )
            return STRICTEST
        try:
            if len(data) > RECORD_BYTES:
                raise ValueError("larger than a ledger record")
            return stricter(CLEAN, _parse(session, data))
        except (ValueError, RecursionError):
            log.error("ledger: %s is damaged; session %s taken as secret, untrusted", path, session)
            return STRICTEST

    def _create(self, session: str, path: Path) -> Label:
        """The state of a session with no record: clean if it is new, else the strictest."""
        if session in self.answered:
            label = self._from_audit(session, path)
        else:
            label = CLEAN
        self._write(session, label)
        return label

    def _from_audit(self, session: str, path: Path) -> Label:
        """The label the audit log's answered lines give a session with no record, or STRICTEST."""
        if self._audited is None or session not in self._audited:
            # Every answered session with no record at once: an upgrade meets them all.
            wanted = {s for s in self.answered if not (self.folder / f"{s}.json").exists()}
            self._audited = answered_labels(self.audit, wanted | {session})
        label, said = self._audited.pop(session)
        if label is None:
            log.error(
                "ledger: %s is missing and the audit log has answered session %s, but its "
                "lines cannot tell its state (%s); taken as secret, untrusted",
                path,
                session,
                said,
            )
            return STRICTEST
        label = stricter(CLEAN, label)
        log.warning(
            "ledger: %s is missing; session %s takes the strictest label of its %s in the "
            "audit log: %s%s (written back)",
            path,
            session,
            said,
            label.klass,
            ", untrusted" if label.untrusted else "",
        )
        return label

    def _write(self, session: str, label: Label) -> None:
        record = {"session": session, "class": label.klass, "untrusted": label.untrusted}
        try:
            ensure_dir(self.folder)
            atomic_write(self._path(session), json.dumps(record).encode("utf-8") + b"\n")
        except OSError as e:
            raise LedgerFailed(
                f"brokerd-shim cannot record the state of session {session}: {e.strerror}; "
                "the result is withheld"
            ) from None

    def raise_to(self, session: str, label: Label) -> SessionState:
        """Make the session's state stricter with label, durably; the new state."""
        current = self.state(session).label
        new = stricter(current, label)
        if new != current:
            self._write(session, new)
            self._cache[session] = new
            log.info(
                "ledger: session %s is now %s%s",
                session,
                new.klass,
                ", untrusted" if new.untrusted else "",
            )
        return SessionState(session, new)
