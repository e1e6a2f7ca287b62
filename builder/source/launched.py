"""What a build driven by pip or xmake read: its compiles ran through the memory launcher,
which kept their depfiles (:mod:`builder.memory.depfiles`), and its Python processes
logged their reads (:mod:`builder.source.reads`).  :func:`launched_inputs` gathers them,
with the CMake runs' ``build.ninja`` inputs, the build scripts (``*.lua``) and the files
they name, and the source files the stage holds copies of; paths in builder's copy of a
patched source are the user's files they were made from.  :func:`builder.source.inputs.
take_record` keeps them with their stat and sha256, as for a CMake build."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from builder.memory import depfiles
from builder.source.digest import VCS_DIRS, StatCache
from builder.source.inputs import (
    build_ninja_inputs,
    cmake_mentions,
    glob_files,
    install_rule_inputs,
    mapped_path,
    mentions,
    prerequisites,
)
from builder.source.reads import cmake_build_dirs, parse_logs, unseen_program

__all__ = ["Launched", "launched_inputs", "launcher_inputs", "staged_copies"]


def launcher_inputs(folder: Path, build: Path) -> set[str] | None:
    """What the compiles read, from the depfiles the memory launcher kept in ``folder``
    (:mod:`builder.memory.depfiles`; relative paths against each compile's folder).  None
    when they cannot be complete: no depfile, a compile marked unknown, or an object file
    below ``build`` older than the folder's first depfile (compiled before depfiles were
    kept: its headers are unknown)."""
    since = folder / depfiles.SINCE
    try:
        first = since.stat().st_mtime_ns
    except OSError:
        return None
    if any(folder.glob("*.unknown")):
        return None
    found = sorted(folder.glob("*.d"))
    if not found:
        return None
    out: set[str] = set()
    for d in found:
        try:
            cwd = (folder / f"{d.stem}.cwd").read_text(encoding="utf-8").split("\n", 1)[0]
            text = d.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        out.update(os.path.join(cwd, p) for p in prerequisites(text))
    for pattern in ("*.o", "*.obj"):
        for obj in build.rglob(pattern):
            with contextlib.suppress(OSError):
                if obj.stat().st_mtime_ns < first:
                    return None
    return out


def _tree_files(roots: Iterable[str]) -> list[str]:
    """Every regular file below the folders ``roots`` (not version-control metadata)."""
    out: list[str] = []
    for root in roots:
        for dirpath, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if d not in VCS_DIRS]
            out.extend(os.path.join(dirpath, n) for n in names)
    return out


def staged_copies(stage: Path, roots: Sequence[str], cache: StatCache) -> set[str]:
    """The files of the source folders whose content a staged file has: what the install
    copied (a header ``xmake install`` copies, a Python file copied into the wheel),
    however it was copied.  Sizes first: only files of a size both sides have are
    hashed (the source side through ``cache``)."""
    sizes: dict[int, list[str]] = {}
    for f in _tree_files(roots):
        with contextlib.suppress(OSError):
            st = os.stat(f)
            if stat.S_ISREG(st.st_mode):
                sizes.setdefault(st.st_size, []).append(f)
    staged: set[str] = set()
    for f in _tree_files([str(stage)]):
        with contextlib.suppress(OSError):
            st = os.lstat(f)
            if stat.S_ISREG(st.st_mode) and st.st_size in sizes:
                staged.add(cache.sha256(Path(f), st))
    out: set[str] = set()
    for files in sizes.values():
        for f in files:
            with contextlib.suppress(OSError):
                if (st := os.stat(f)).st_size in sizes and cache.sha256(Path(f), st) in staged:
                    out.add(f)
    return out


@dataclass(frozen=True)
class Launched:
    """Where a build driven by pip or xmake left what it read (its compiles ran through
    the memory launcher)."""

    depfiles: str  # the launcher's depfile folder (builder.memory.depfiles)
    reads: str = ""  # the Python processes' log folder (builder.source.reads); "": none
    stage: str = ""  # the staged install: the source files it holds copies of are inputs
    wrappers: str = ""  # the folder of the compiler wrappers (a compile through one is seen)
    #: (builder's copy, the user's folder) of a patched source: the copy's files are
    #: recorded as the user's files they were made from
    mapped: tuple[tuple[str, str], ...] = ()
    scripts: tuple[str, ...] = ()  # build scripts' suffixes: all of them are inputs (*.lua)


def launched_inputs(spec: Launched, build: Path, roots: Sequence[str], cache: StatCache,
                    collected: Sequence[str] = ()) -> set[str] | None:
    """What a pip or xmake build read: the compiles' depfiles, the Python processes' reads
    and the ``build.ninja`` inputs of the CMake runs they started, the build scripts of
    the source folders (``scripts``) and the files they name, the source files the stage
    holds copies of — with the paths in builder's copy of a patched source mapped to the
    user's folder.  None when that is not complete (see :func:`launcher_inputs`; a
    missing log; a program started whose reads nobody sees)."""
    paths = launcher_inputs(Path(spec.depfiles), build)
    if paths is None:
        return None
    read_roots = [copy for copy, _ in spec.mapped] + \
        [r for r in roots if r not in {orig for _, orig in spec.mapped}]
    if spec.reads:
        logged = parse_logs(Path(spec.reads))
        if not logged.logs or unseen_program(logged.programs, spec.wrappers):
            return None
        paths |= logged.files
        for d in cmake_build_dirs(logged.programs):
            if not (Path(d) / "build.ninja").is_file():
                return None  # another generator: its configure inputs are unknown
            found = build_ninja_inputs(Path(d)) | glob_files(list(install_rule_inputs(Path(d))))
            paths |= found | cmake_mentions(found, read_roots)
    if spec.scripts:
        scripts = {f for f in _tree_files(read_roots) if f.endswith(spec.scripts)}
        paths |= scripts | mentions(scripts, read_roots, spec.scripts)
    if spec.stage and Path(spec.stage).is_dir():
        paths |= staged_copies(Path(spec.stage), read_roots, cache)
    paths |= glob_files(collected)  # install.files patterns, absolute
    return {m for p in paths
            if "\0" not in p and (m := mapped_path(os.path.normpath(p), spec.mapped))}
