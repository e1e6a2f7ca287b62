"""What identifies a compile job across builds, so that its measured memory is found again.

A translation unit is named by what determines its compile, never by where a build put
it: a source file by ``<scope>:<path below the source root>`` (the scope is the recipe's
name), so that moving the project or building another variant (whose build folder is
named by its key) finds the same history; a CMake unity file — which lives in the
variant's build folder — by a digest of what it includes (its text, with the source root
and the build folder written as ``<source>`` and ``<build>``); any other file below the
build folder (generated sources) by its path below it.  The exact history key adds the
compile flags (with the same two folders written alike), the compiler and the source's
content, so an edited file or other flags fall back to the file's last measurement
(``History.for_file``), not to another compile's.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from builder.memory.history import flags_hash, job_key

__all__ = ["compile_id", "compile_key", "normalized_flags_hash"]


def _below(path: str, folder: str) -> str | None:
    """``path`` relative to ``folder`` (POSIX), or None when it is not below it."""
    if not folder:
        return None
    try:
        return Path(path).relative_to(folder).as_posix()
    except ValueError:
        return None


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()[:1_000_000]
    except OSError:
        return b""


def _unity_digest(path: str, source_root: str, build_dir: str) -> str:
    """The file's content, with the two folders written as ``<source>``/``<build>``."""
    text = _read(path)
    for folder, name in ((build_dir, b"<build>"), (source_root, b"<source>")):
        if folder:
            text = text.replace(folder.encode(), name)
    return hashlib.sha256(text).hexdigest()[:16]


def compile_id(file: str, source_root: str, build_dir: str, scope: str) -> str:
    """The history's name for the TU ``file`` (absolute) — see the module docstring."""
    in_build = _below(file, build_dir)
    if in_build is not None:
        if "/Unity/" in f"/{in_build}" and Path(file).name.startswith("unity_"):
            return f"{scope}:unity:{_unity_digest(file, source_root, build_dir)}"
        return f"{scope}:<build>/{in_build}"
    rel = _below(file, source_root)
    return f"{scope}:{rel}" if rel is not None else file


def normalized_flags_hash(argv: list[str], source_root: str, build_dir: str) -> str:
    """:func:`history.flags_hash` with the source root written as ``<source>`` too."""
    out = [a.replace(build_dir, "<build>") if build_dir else a for a in argv]
    out = [a.replace(source_root, "<source>") if source_root else a for a in out]
    return flags_hash(out, "")


def compile_key(cid: str, argv: list[str], file: str, source_root: str, build_dir: str,
                *, link: bool = False) -> str:
    """The exact history key: the compile's id, flags, compiler and source content.  A
    link's ``file`` is its output, which an earlier build may have left or not: its key is
    the id, flags and linker only."""
    # (a unity file names paths: its digest writes the two folders alike)
    content = "" if link else _unity_digest(file, source_root, build_dir)
    compiler = Path(argv[0]).name if argv else ""
    return job_key(cid, normalized_flags_hash(argv, source_root, build_dir) + content,
                   compiler)
