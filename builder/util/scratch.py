"""Private scratch in the temporary folder: a child's ``TMPDIR``, the brokers' socket
folder and the leftovers of killed builds there.  Nothing here is persisted or lies in a
user's folder, so it is the one other module that creates and removes files itself
(``tests/unit/test_writer_is_the_only_writer.py`` names it); everything builder keeps goes
through :mod:`builder.util.writer`."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["private_dir", "private_tmp", "remove_orphans", "remove_socket"]


def remove_orphans(folder: Path, prefix: str, kind: Callable[[int], bool]) -> None:
    """Remove this user's ``<folder>/<prefix><pid>-*`` entries of ``kind`` (``stat.S_ISSOCK``,
    ``stat.S_ISDIR``) whose process ``pid`` no longer exists: what a process killed with
    SIGKILL could not remove itself.  A pid in use again, or one we may not signal, keeps
    its entry; anything else named alike is not touched."""
    for entry in folder.glob(f"{prefix}*-*"):
        try:
            pid = int(entry.name[len(prefix):].split("-")[0])
            st = os.lstat(entry)
            if not kind(st.st_mode) or st.st_uid != os.getuid():
                continue
            os.kill(pid, 0)
        except ProcessLookupError:
            if stat.S_ISDIR(st.st_mode):
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
        except (ValueError, OSError):
            continue


def private_dir(path: Path) -> bool:
    """Make ``path`` a folder private to this user (mode 0700); False when it cannot be,
    or when what stands there is not this user's private folder (someone else could
    watch it)."""
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def remove_socket(path: Path) -> None:
    """Remove a socket this process bound (or a stale one at that path); nothing else."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISSOCK(st.st_mode):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


@contextlib.contextmanager
def private_tmp(prefix: str, wanted: bool = True, root: str | None = None
                ) -> Iterator[str | None]:
    """A temporary folder of one's own (named ``<prefix>XXXXXXXX`` in ``root``, default the
    temporary folder), removed on the way out however the block ends — for a child's ``TMPDIR``,
    so that what a compiler leaves there goes with it.  None when not ``wanted`` or when
    no temporary folder is writable (the child then finds its own, as before)."""
    tmp = None
    if wanted:
        with contextlib.suppress(OSError):
            tmp = tempfile.mkdtemp(prefix=prefix, dir=root)
    try:
        yield tmp
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
