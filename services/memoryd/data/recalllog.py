"""Replacing recall log files under the recall log's own writer.

The recall log (recall/logfile.py, RecallLog) keeps its month file open and appends to it from
reader threads. A forget that rewrites a month, or a restore that lays one, renames a new file over
it: appends to the old descriptor would then go to a file no longer in the folder and be lost. So
the rename happens while the log's lock is held (no append in between) and the descriptor is
closed under it: the next recall opens the file that is there now.
"""

import contextlib
import os
from collections.abc import Iterator


@contextlib.contextmanager
def held(service) -> Iterator[None]:
    """Hold the recall log still while its files are replaced; it reopens them after."""
    recall_log = getattr(service.recaller, "_log", None)
    if recall_log is None:
        yield
        return
    with recall_log._lock:
        try:
            yield
        finally:
            if recall_log._fd is not None:
                try:
                    os.fsync(recall_log._fd)
                except OSError:
                    pass
                os.close(recall_log._fd)
                recall_log._fd = None
                recall_log._month = None
