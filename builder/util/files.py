"""Files written so that a reader sees the old or the new content, never half, and the
content hashes every manifest records.  Shared by every phase that persists something."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from builder.util import writer
from builder.util.scratch import private_tmp, remove_orphans

__all__ = ["atomic_write", "file_list", "file_sha256", "link_list", "private_tmp", "remove_orphans",
           "replace_dir", "sync_tree"]


def atomic_write(path: Path, text: str) -> None:
    """Write one of builder's text files atomically, in a folder builder owns
    (:func:`builder.util.writer.write_text`)."""
    if path.is_dir():  # named as what the user gave, not the temporary file
        import errno

        raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", str(path))
    writer.write_text(path, text)


def replace_dir(src: Path, dst: Path) -> None:
    """Move the finished folder ``src`` to ``dst``, replacing what was there."""
    writer.replace_dir(src, dst)


def sync_tree(src: Path, dst: Path) -> int:
    """Make ``dst`` (an owned folder) hold what ``src`` holds, rewriting only what differs:
    a file with the same bytes and mode, a link with the same target, stay as they are —
    their times too, so that an incremental build in a folder that follows ``dst``
    recompiles only what changed.  What ``dst`` has and ``src`` has not is removed.
    Returns how many entries were written or removed."""
    import filecmp
    import stat

    changed = 0
    for folder, dirs, files in os.walk(src):
        here = Path(folder)
        there = dst / here.relative_to(src)
        names = set(dirs) | set(files)
        for name in sorted(names):
            s, d = here / name, there / name
            st, dt = os.lstat(s), _lstat(d)
            if stat.S_ISLNK(st.st_mode):
                if dt is not None and stat.S_ISLNK(dt.st_mode) and \
                        os.readlink(s) == os.readlink(d):
                    continue
                writer.remove(d)
                writer.copy_link(s, d)
            elif stat.S_ISDIR(st.st_mode):
                if dt is not None and stat.S_ISDIR(dt.st_mode):
                    continue
                writer.remove(d)
                writer.make_dirs(d)
            else:
                if dt is not None and stat.S_ISREG(dt.st_mode) and \
                        st.st_size == dt.st_size and \
                        (st.st_mode & 0o777) == (dt.st_mode & 0o777) and \
                        filecmp.cmp(s, d, shallow=False):
                    continue
                if dt is not None and not stat.S_ISREG(dt.st_mode):
                    writer.remove(d)
                writer.copy_file(s, d)
            changed += 1
        for extra in sorted(os.listdir(there)) if there.is_dir() else ():
            if extra not in names:
                writer.remove(there / extra)
                changed += 1
    return changed


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


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
