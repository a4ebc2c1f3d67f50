"""The shared protocol of boxmaker's memory roles.

Layers, each in its own module: bytes and frames (frames.py), labels (labels.py), message kinds
and bodies (messages.py), the memory tools' arguments (tools.py), session log records
(records.py), escaping for terminals and chat (escape.py), and one request/one reply over a Unix
socket (client.py, server.py). Every error this package raises is a ProtoError, but one:
files.NotTakenBack, the OSError of a failed append whose cut-back failed too, which stays the
write's own error (its errno and text) so that every caller handles it as it handled that.
"""

from proto.errors import (
    FrameCutShort,
    FrameMalformed,
    FrameTimeout,
    FrameTooLarge,
    InvalidArguments,
    InvalidMessage,
    PeerClosed,
    ProtoError,
    RecordDamaged,
    Unreachable,
)
from proto.frames import MAX_FRAME
from proto.labels import DataClass, Label, stricter

__all__ = [
    "MAX_FRAME",
    "DataClass",
    "FrameCutShort",
    "FrameMalformed",
    "FrameTimeout",
    "FrameTooLarge",
    "InvalidArguments",
    "InvalidMessage",
    "Label",
    "PeerClosed",
    "ProtoError",
    "RecordDamaged",
    "Unreachable",
    "stricter",
]
