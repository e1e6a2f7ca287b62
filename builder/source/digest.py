"""Content digests of source trees, and the translation units a tree compiles (for the
memory prediction)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from builder.memory.estimate import SOURCE_SUFFIXES, scan_includes
from builder.util.files import file_sha256

__all__ = ["SKIP_DIRS", "compile_units", "tree_digest"]

SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".builder", "build", ".pytest_cache",
             ".mypy_cache", ".ruff_cache", ".nox", "node_modules"}


def tree_digest(root: Path) -> str:
    """A digest of every file's relative path, mode bit and content below ``root``."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and
                             not d.endswith(".egg-info"))
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")):
                continue
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            try:
                st = p.stat()
                digest = file_sha256(p)
            except OSError:
                continue
            h.update(f"{rel}\0{st.st_mode & 0o111 != 0}\0{digest}\n".encode())
    return h.hexdigest()


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


