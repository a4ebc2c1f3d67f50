"""A turn's records, written to a session log that may run out of room.

A call that ran must be told to the turn as it ran, and left in the log with an answer: a memory
write applied whose result the log could not take, answered only "cannot append", is written again
by a model that retries, and leaves a call in the log that reads as never answered. So a turn with
calls starts only when the log has room for its assistant record and a line for each call
(logroom.reserve); a result is logged whole only while room stays for a line for each later call;
a call runs only while that room is there, else it is answered "not run". A result the log cannot
take is logged as a line saying the call ran, with the result's label (so the session's taint
stays in the log), and reaches the turn with a first line saying the log does not hold it. A line
the log cannot take even so (the disk filled by another while the call ran) is owed: written
before the session's next record (SessionStore.owe), and no later call of the turn runs.
"""

import logging

from loopd_shim import logroom
from loopd_shim.errors import AppendFailed, SessionLogFailed
from loopd_shim.sessions import SessionStore
from proto.messages import ToolCall, ToolResultOut
from proto.records import AssistantRecord, ToolResultRecord

log = logging.getLogger("loopd_shim.service")


class TurnLog:
    """The records of assistant turns, for the sessions of one store. Called under the
    session's lock, from a worker thread (every method touches the disk)."""

    def __init__(self, sessions: SessionStore):
        self.sessions = sessions

    def begin(self, session: str, record: AssistantRecord, calls: list[ToolCall]) -> None:
        """Append the turn's assistant record; SessionLogFailed, before anything is written or
        run, when the log has no room for it and a line for each call's result."""
        path = self.sessions.log_path(session)
        if calls:
            needed = logroom.line_bytes(record) + sum(logroom.reserve(call) for call in calls)
            short = logroom.short_of(path, needed)
            if short is not None:
                raise SessionLogFailed(
                    f"session {session}: {path} has no room for this turn ({needed:,} bytes for"
                    f" its record and a line for each call, {short.reason()}); the turn was not"
                    " recorded, and no call of it ran (free some room, or go on in a new session)"
                )
        try:
            self.sessions.append(session, record)
        except SessionLogFailed as e:
            ran = ", and no call of it ran" if calls else ""
            raise SessionLogFailed(f"{e}; the turn was not recorded{ran}") from None

    def no_room(self, session: str, calls: list[ToolCall]) -> str | None:
        """Why calls[0] must not run: the log still owes a record, or has no room left for a line
        for the result of each of calls; None when it may run."""
        if self.sessions.owes(session):
            return "it could not take an earlier result of this turn"
        needed = sum(logroom.reserve(call) for call in calls)
        short = logroom.short_of(self.sessions.log_path(session), needed)
        return None if short is None else short.reason()

    def not_run(self, session: str, call: ToolCall, reason: str) -> ToolResultOut:
        """Answer call as not run, and log that answer (or owe it)."""
        result = logroom.not_run(call, reason)
        log.warning("session %s: call %s not run: %s", session, call.id, reason)
        self._log(session, logroom.record_of(result))
        return result

    def result(
        self, session: str, result: ToolResultOut, calls: list[ToolCall]
    ) -> tuple[ToolResultOut, bool]:
        """Log the result of calls[0] whole when the log can take it and keep room for a line for
        each later call (or when it is no longer than its own line); else a line saying the call
        ran (owed if even that does not fit). The result as the turn gets it, and whether the log
        holds it whole."""
        record = logroom.record_of(result)
        size, own = logroom.line_bytes(record), logroom.reserve(calls[0])
        keep = sum(logroom.reserve(call) for call in calls[1:])
        short = logroom.short_of(self.sessions.log_path(session), size + keep)
        if short is not None and keep and size > own:
            reason = f"{short.reason()}, too few for it and a line for each call after it"
        else:
            try:
                self.sessions.append(session, record)
                return result, True
            except AppendFailed as e:
                reason = e.reason
        log.warning(
            "session %s: result of call %s (%s) not logged whole: %s",
            session,
            result.call_id,
            result.name,
            reason,
        )
        self._log(session, logroom.unrecorded(result, reason))
        return logroom.told(result, reason, held_later=self.sessions.owes(session)), False

    def _log(self, session: str, record: ToolResultRecord) -> None:
        """Append record, or owe it when the log cannot take it."""
        try:
            self.sessions.append(session, record)
        except AppendFailed as e:
            log.warning(
                "session %s: the line for call %s not logged: %s", session, record.call_id, e.reason
            )
            self.sessions.owe(session, record)
