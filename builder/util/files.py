"""Files written so that a reader sees the old or the new content, never half, and the
content hashes every manifest records.  Shared by every phase that persists something."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["atomic_write", "file_list", "file_sha256", "private_tmp", "remove_orphans",
           "replace_dir"]


def atomic_write(path: Path, text: str) -> None:
    """Write a text file next to its final place and rename it there."""
    if path.is_dir():  # named as what the user gave, not the temporary file
        import errno

        raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def replace_dir(src: Path, dst: Path) -> None:
    """Move the finished folder ``src`` to ``dst``, replacing what was there."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    old = dst.with_name(f".{dst.name}.old{os.getpid()}")
    if old.exists():  # left by a killed builder that had this pid
        shutil.rmtree(old, ignore_errors=True)
    if dst.exists():
        os.replace(dst, old)
    os.replace(src, dst)
    if old.exists():
        shutil.rmtree(old, ignore_errors=True)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def file_list(root: Path) -> list[dict[str, Any]]:
    """Every regular file below ``root`` (but a manifest) with its size and sha256."""
    out = []
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink() and p.name != "manifest.json":
            out.append({"path": p.relative_to(root).as_posix(), "size": p.stat().st_size,
                        "sha256": file_sha256(p)})
    return out


def link_list(root: Path) -> list[dict[str, str]]:
    """Every symbolic link below ``root`` with its target as written (not followed): an
    install's ``libx.so -> libx.so.1`` is part of what was installed, like a file."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted([*dirnames, *filenames]):
            p = Path(dirpath) / name
            if p.is_symlink():
                out.append({"path": p.relative_to(root).as_posix(), "target": os.readlink(p)})
    return sorted(out, key=lambda x: x["path"])


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


@contextlib.contextmanager
def private_tmp(prefix: str, wanted: bool = True, root: str | None = None
                ) -> Iterator[str | None]:
    """A temporary folder of one's own (named ``<prefix>XXXXXXXX`` in ``root``, default
    the temporary folder), removed on the way out however the block ends — for a child's
    ``TMPDIR``, so that what a compiler leaves there goes with it.  None when not
    ``wanted`` or when no temporary folder is writable (the child then finds its own, as
    before)."""
    tmp = None
    if wanted:
        with contextlib.suppress(OSError):
            tmp = tempfile.mkdtemp(prefix=prefix, dir=root)
    try:
        yield tmp
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
