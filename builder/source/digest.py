"""Content digests of source trees, and the translation units a tree compiles (for the
memory prediction).

A tree's digest covers every entry below its root — regular files (path, executable
bit, content), symbolic links (path, target, and the content of a file they point to)
and special files (path and type; never opened) — leaving out only version-control
metadata (``.git``, ``.hg``, ``.svn``), builder's own state folders (recognised by their
``.builder-state`` marker, never by name) and the ``.builder-source.json`` a fetch writes
at the root.  No folder is left out for its name: an edited ``build/`` or
``node_modules/`` header rebuilds.

Hashing is cached by file identity (:class:`StatCache`: size, mtime, ctime, inode), so
that a no-op build re-reads no unchanged file.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from pathlib import Path
from typing import Any

from builder.memory.estimate import SOURCE_SUFFIXES, scan_includes
from builder.util.files import file_sha256

__all__ = ["SKIP_DIRS", "VCS_DIRS", "StatCache", "compile_units", "tree_digest",
           "tree_digests"]

#: version-control metadata: the only folders a digest leaves out by name
VCS_DIRS = frozenset({".git", ".hg", ".svn"})
#: folders not scanned for translation units (memory prediction only, never keys)
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".builder", "build", ".pytest_cache",
             ".mypy_cache", ".ruff_cache", ".nox", "node_modules"}
STATE_MARKER = ".builder-state"  # builder.workspace.ownership.STATE_MARKER
SOURCE_MARKER = ".builder-source.json"  # builder.source.fetch's marker
#: a file changed this recently may change again within the same timestamp tick
_RACY_SECONDS = 2.0


class StatCache:
    """sha256 of files by identity: ``path → (size, mtime_ns, ctime_ns, inode, sha256)``.
    An entry is used only when all four match; files written in the last two seconds are
    hashed but not remembered (their timestamp could be reused by a second write)."""

    def __init__(self, entries: dict[str, tuple[int, int, int, int, str]] | None = None
                 ) -> None:
        self.entries = dict(entries or {})
        self.used: set[str] = set()
        self.dirty = False

    def sha256(self, path: Path, st: os.stat_result | None = None) -> str:
        st = st or os.stat(path)
        key = str(path)
        ident = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        hit = self.entries.get(key)
        self.used.add(key)
        if hit is not None and hit[:4] == ident:
            return hit[4]
        digest = file_sha256(path)
        if time.time() - max(st.st_mtime, st.st_ctime) > _RACY_SECONDS:
            self.entries[key] = (*ident, digest)
            self.dirty = True
        elif hit is not None:
            del self.entries[key]
            self.dirty = True
        return digest

    def kept(self) -> dict[str, tuple[int, int, int, int, str]]:
        """The entries looked at in this run (what a later run can use)."""
        return {k: v for k, v in self.entries.items() if k in self.used}


def _special(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "fifo"), (stat.S_ISSOCK, "socket"),
                       (stat.S_ISCHR, "char-device"), (stat.S_ISBLK, "block-device")):
        if test(mode):
            return name
    return "other"


def tree_digest(root: Path, cache: StatCache | None = None,
                exclude: tuple[str, ...] = ()) -> str:
    """A digest of every entry below ``root`` (see the module's docstring) but those the
    recipe's ``source.exclude`` globs leave out."""
    return tree_digests(root, cache, exclude)[0]


def tree_digests(root: Path, cache: StatCache | None = None,
                 exclude: tuple[str, ...] = (), files: dict[str, str] | None = None
                 ) -> tuple[str, str]:
    """(:func:`tree_digest`, a digest of its files' names alone), from one
    walk: the second changes when a file is added, removed or renamed, never when one
    is edited (:mod:`builder.source.inputs` checks the files a build read by content).
    ``files``: filled with each entry's own digest (content, mode or link target) by its
    path relative to ``root`` — what a lockfile lists to say which file drifted."""
    from builder.source.policy import excluded

    cache = cache or StatCache()
    h = hashlib.sha256()
    names = hashlib.sha256()

    def unreadable(exc: OSError) -> None:  # a folder that cannot be listed
        h.update(f"{exc.filename}\0unlistable\0{exc.errno}\n".encode())

    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable):
        here = Path(dirpath)
        keep = []
        for d in dirnames:
            p = here / d
            if d in VCS_DIRS or (p / STATE_MARKER).is_file() or \
                    excluded(p.relative_to(root).as_posix(), exclude):
                continue
            if p.is_symlink():  # os.walk does not follow it: hash it as a link
                filenames.append(d)
                continue
            keep.append(d)
        dirnames[:] = sorted(keep)
        for name in sorted(filenames):
            p = here / name
            rel = p.relative_to(root).as_posix()
            if rel == SOURCE_MARKER or excluded(rel, exclude):
                continue
            names.update(f"{rel}\0".encode())
            try:
                st = os.lstat(p)
                if stat.S_ISLNK(st.st_mode):
                    target = os.readlink(p)
                    content = ""
                    try:
                        tst = os.stat(p)
                        if stat.S_ISREG(tst.st_mode):
                            content = cache.sha256(p, tst)
                    except OSError:
                        content = "dangling"
                    _entry(h, files, rel, f"{rel}\0link\0{target}\0{content}\n".encode())
                elif stat.S_ISREG(st.st_mode):
                    digest = cache.sha256(p, st)
                    _entry(h, files, rel,
                           f"{rel}\0{st.st_mode & 0o111 != 0}\0{digest}\n".encode())
                else:
                    _entry(h, files, rel, f"{rel}\0{_special(st.st_mode)}\n".encode())
            except OSError as exc:  # unreadable: its state is part of the digest
                _entry(h, files, rel, f"{rel}\0unreadable\0{exc.errno}\n".encode())
    return h.hexdigest(), names.hexdigest()


def _entry(h: Any, files: dict[str, str] | None, rel: str, line: bytes) -> None:
    """One entry of a tree's digest, and of ``files`` when asked."""
    h.update(line)
    if files is not None:
        files[rel] = hashlib.sha256(line).hexdigest()[:16]


def compile_units(root: Path) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Every C/C++/CUDA translation unit below ``root`` with the headers it includes
    (followed through the project's own headers), for the memory prediction."""
    out = []
    roots = (root, root / "include", root / "src")
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            if name.endswith(SOURCE_SUFFIXES):
                p = Path(dirpath) / name
                out.append((p.relative_to(root).as_posix(), scan_includes(p, roots)))
    return tuple(out)


