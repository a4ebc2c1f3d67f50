"""The errors of the proto package: one base, a subclass for each thing that can go wrong.

Callers decide by type, never by message text. Every message is written to be shown to a peer or
an owner as it is: it never carries a traceback.
"""


class ProtoError(Exception):
    """Base of every error raised by proto."""


class FrameError(ProtoError):
    """A frame could not be read or written."""


class FrameTooLarge(FrameError):
    """The length prefix is 0 or above MAX_FRAME."""


class FrameMalformed(FrameError):
    """The payload is not a MessagePack map of exactly kind and body."""


class PeerClosed(FrameError):
    """The peer closed the connection before a whole frame arrived."""


class FrameCutShort(PeerClosed):
    """The peer closed its side after part of a frame: fewer bytes than its length announced."""


class FrameTimeout(FrameError):
    """The peer did not finish its frame in time."""


class Unreachable(ProtoError):
    """Nothing answers on the socket (missing, refused, or not a socket)."""


class InvalidMessage(ProtoError):
    """An unknown kind, or a body that does not validate."""


class UnexpectedReply(ProtoError):
    """A valid reply, but not of the kind the request asked for (client.request(reply=...)).

    got is the reply's model name (e.g. "Ok"), for a caller's own message.
    """

    def __init__(self, message: str, got: str):
        super().__init__(message)
        self.got = got


class InvalidArguments(ProtoError):
    """Tool arguments that do not have the shape or limits of their tool."""


class RecordDamaged(ProtoError):
    """A complete line of a session log that is not a valid record."""

    def __init__(self, message: str, line: int, offset: int):
        super().__init__(message)
        self.line = line
        self.offset = offset
