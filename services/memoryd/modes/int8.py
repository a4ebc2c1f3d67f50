"""How a vector is stored in the index: 384 int8, a quarter of float32, with every cosine kept
within 0.01; rows an older memoryd wrote as float32 are still read. Both the exact matrix
(vectors.py) and the approximate index (ann.py) read the table through these.
"""

import numpy as np

from memoryd.modes.embed import DIMENSIONS

# A vector written as float32 by an older memoryd.
FLOAT_BYTES = 4 * DIMENSIONS


def pack(vector: np.ndarray) -> bytes:
    """A unit vector as 384 int8, its largest component at 127."""
    v = np.asarray(vector, dtype=np.float32)
    top = float(np.abs(v).max()) or 1.0
    return np.clip(np.rint(v * (127.0 / top)), -127, 127).astype(np.int8).tobytes()


def quantise(vectors: np.ndarray) -> np.ndarray:
    """pack for a whole (n, 384) array: an (n, 384) int8 array."""
    v = np.asarray(vectors, dtype=np.float32)
    top = np.abs(v).max(axis=1, keepdims=True)
    top[top == 0] = 1.0
    return np.clip(np.rint(v * (127.0 / top)), -127, 127).astype(np.int8)


def unpack(blobs: list) -> np.ndarray:
    """Stored vectors as an (n, 384) float32 array of unit vectors (int8 or an older float32).

    A value that is neither (damaged, or edited by hand: another length, not a blob, NULL, a
    float32 vector holding a NaN or an infinity) gives a row of zeros, which is near nothing;
    unreadable() finds those rows, and the embedder computes their vectors again."""
    out = _int8_rows(blobs)
    if out is not None:
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    out = np.zeros((len(blobs), DIMENSIONS), dtype=np.float32)
    for row, blob in enumerate(blobs):
        if not isinstance(blob, bytes):
            continue
        if len(blob) == DIMENSIONS:
            out[row] = np.frombuffer(blob, dtype=np.int8)
        elif len(blob) == FLOAT_BYTES:
            out[row] = np.frombuffer(blob, dtype="<f4")
    with np.errstate(over="ignore", invalid="ignore"):
        out = out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    # A NaN or an infinity, or a norm too large for float32, leaves no number to keep in the row.
    out[~np.isfinite(out).all(axis=1)] = 0.0
    return out


def _int8_rows(blobs: list) -> np.ndarray | None:
    """The blobs as an (n, 384) float32 array when every one is 384 bytes (the common case, in
    one step), else None."""
    try:
        if set(map(len, blobs)) <= {DIMENSIONS}:
            joined = np.frombuffer(b"".join(blobs), dtype=np.int8)
            return joined.reshape(len(blobs), DIMENSIONS).astype(np.float32)
    except TypeError:  # NULL, a number, text of that length: not a blob
        pass
    return None


def unreadable(vectors: np.ndarray) -> np.ndarray:
    """The positions of unpack()'s rows that were not a vector (all zeros: a stored vector
    never is, pack() scales its largest component to 127)."""
    return np.flatnonzero(~vectors.any(axis=1))
