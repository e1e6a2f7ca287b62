"""Which source files a CMake project compiles, read from its own CMake files — for the
plan's compile-job estimate, which listed every C/C++/CUDA file below the source root
(931 for a project that compiles 42: vendored third-party trees, examples, tools).

A file counts when a CMake file of the project names it (relative to that file's
folder, or through ``${CMAKE_CURRENT_SOURCE_DIR}``/``${PROJECT_SOURCE_DIR}``/
``${CMAKE_SOURCE_DIR}``) or matches a ``file(GLOB …)`` pattern written the same way.  A
project that names sources through other variables cannot be read this way: None, and
the plan says so instead of guessing.
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path

from builder.memory.estimate import SOURCE_SUFFIXES

__all__ = ["listed_sources"]

_TOKEN = re.compile(r'"([^"]*)"|([^\s()"#]+)')
_COMMENT = re.compile(r"#[^\n]*")
_ROOT_VARS = ("${CMAKE_CURRENT_SOURCE_DIR}/", "${CMAKE_CURRENT_LIST_DIR}/")
_TOP_VARS = ("${PROJECT_SOURCE_DIR}/", "${CMAKE_SOURCE_DIR}/")
_SKIP = {".git", "build", ".builder", "node_modules", "__pycache__"}


def _cmake_files(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP)
        out += [Path(dirpath) / n for n in sorted(filenames)
                if n == "CMakeLists.txt" or n.endswith(".cmake")]
    return out


def listed_sources(root: Path, candidates: list[str]) -> set[str] | None:
    """The paths (relative to ``root``) among ``candidates`` that the project's CMake files
    name; None when it has no CMakeLists.txt or names sources through other variables."""
    if not (root / "CMakeLists.txt").is_file():
        return None
    names: set[str] = set()
    patterns: list[str] = []
    for cm in _cmake_files(root):
        try:
            text = _COMMENT.sub("", cm.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        base = cm.parent.relative_to(root).as_posix()
        for m in _TOKEN.finditer(text):
            tok = m.group(1) if m.group(1) is not None else m.group(2)
            if not tok.endswith(SOURCE_SUFFIXES):
                continue
            for var in _ROOT_VARS:
                tok = tok.replace(var, "")
            top = tok.startswith(_TOP_VARS)
            for var in _TOP_VARS:
                tok = tok.replace(var, "")
            if "${" in tok:
                return None  # a source named through a variable: cannot know
            rel = os.path.normpath(tok if top or base == "." else f"{base}/{tok}")
            if any(c in tok for c in "*?["):
                patterns.append(rel)
            else:
                names.add(rel)
    return {c for c in candidates
            if c in names or any(fnmatch.fnmatch(c, p) for p in patterns)}
