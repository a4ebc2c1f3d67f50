"""How a vector is stored in the index: 384 int8, a quarter of float32, with every cosine kept
within 0.01; rows an older memoryd wrote as float32 are still read. Both the exact matrix
(vectors.py) and the approximate index (ann.py) read the table through these.
"""

import numpy as np

from memoryd.modes.embed import DIMENSIONS


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


def unpack(blobs: list[bytes]) -> np.ndarray:
    """Stored vectors as an (n, 384) float32 array of unit vectors (int8 or an older float32)."""
    if set(map(len, blobs)) <= {DIMENSIONS}:
        joined = np.frombuffer(b"".join(blobs), dtype=np.int8)
        out = joined.reshape(len(blobs), DIMENSIONS).astype(np.float32)
    else:
        out = np.zeros((len(blobs), DIMENSIONS), dtype=np.float32)
        for row, blob in enumerate(blobs):
            dtype = np.int8 if len(blob) == DIMENSIONS else np.dtype("<f4")
            out[row] = np.frombuffer(blob, dtype=dtype)[:DIMENSIONS]
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.maximum(norms, 1e-12)
