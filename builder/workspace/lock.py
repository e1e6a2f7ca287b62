"""One builder at a time per workspace: an advisory lock on ``.builder/lock``.

The second process waits and says so (or fails at once with ``--no-wait``).  The
kernel releases the lock when its holder dies, so a killed build never leaves a
stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from builder.errors import LockedError
from builder.workspace.paths import Workspace

__all__ = ["workspace_lock"]


@contextmanager
def workspace_lock(ws: Workspace, wait: bool = True) -> Iterator[None]:
    from builder.util.writer import open_lock
    from builder.workspace.ownership import claim_state

    claim_state(ws.state)  # builder's state folder (made, or refused), before any write
    fd = open_lock(ws.lock_file)  # a link or a FIFO there is refused, never written
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "another process"
            if not wait:
                raise LockedError(f"the workspace {ws.state} is in use by builder "
                                  f"(pid {holder}); retry later or drop --no-wait") from None
            print(f"waiting for another builder (pid {holder}) to finish with {ws.state} …",
                  file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the lock
