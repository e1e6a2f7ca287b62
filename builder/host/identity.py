"""Toolchain identity by content: which files a tool really is, and their sha256.

A tool's version string does not identify it: two ``g++`` binaries of one version (a
rebuilt or patched compiler, another vendor's build), a wrapper script whose exec
target was upgraded, or a ccache symlink in front of another compiler all print the
same version and make different objects.  :func:`tool_files` follows what runs when
the tool is invoked — symbolic links, ``#!`` scripts (their interpreter and every
absolute path to an executable they name), compiler caches (the compiler found after
the cache on ``PATH``), and the programs a compiler driver runs (``cc1plus``, ``as``,
``ld``; nvcc's ``cicc``, ``ptxas``, ``fatbinary``) — and :func:`identity` digests their
content.  A cache entry holds each file's (size, mtime_ns, inode): it is used only when
every one of them still matches, so that a changed target behind an unchanged wrapper
is noticed while a no-op reads no binary.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from builder.util.files import file_sha256

__all__ = ["CACHES", "FileStat", "driver_programs", "identity", "stats_match", "tool_files"]

#: compiler caches: the real compiler is the next one of the same name on PATH
CACHES = frozenset({"ccache", "sccache", "buildcache"})
#: a ``#!`` script reads at most this much to find what it runs
_SCRIPT_LIMIT = 64 * 1024
#: how deep wrappers of wrappers are followed
_DEPTH = 4
_ABS_PATH = re.compile(rb"(/[A-Za-z0-9_.+@/-]+)")

#: (path, size, mtime_ns, inode)
FileStat = tuple[str, int, int, int]
#: (argv) -> (exit status, output)
Capture = Callable[[list[str]], tuple[int, str]]


def _stat(path: str) -> FileStat | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (path, st.st_size, st.st_mtime_ns, st.st_ino)


def stats_match(stats: Sequence[Sequence[object]]) -> bool:
    """Every recorded (path, size, mtime_ns, inode) still describes the file."""
    for rec in stats:
        now = _stat(str(rec[0]))
        if now is None or list(now) != list(rec):
            return False
    return True


def _is_exe(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _script_targets(path: str) -> list[str]:
    """The interpreter and the executables a ``#!`` script names by absolute path."""
    try:
        with open(path, "rb") as f:
            head = f.read(_SCRIPT_LIMIT)
    except OSError:
        return []
    if not head.startswith(b"#!"):
        return []
    out = []
    for m in _ABS_PATH.finditer(head):
        cand = m.group(1).decode(errors="replace")
        if cand != path and _is_exe(cand):
            out.append(cand)
    return list(dict.fromkeys(out))


def _after_cache(name: str, cache_real: str, search_path: str) -> str | None:
    """The first ``name`` on the search path that is not the compiler cache itself."""
    for d in search_path.split(os.pathsep):
        cand = os.path.join(d, name)
        if _is_exe(cand) and os.path.realpath(cand) != cache_real:
            return cand
    return None


def tool_files(exe: str, search_path: str = "", extra: Sequence[str] = ()) -> list[str]:
    """The real files that run when ``exe`` is invoked (see the module's docstring), in a
    stable order, ``exe``'s own resolved file first; ``extra``: programs the tool runs,
    found by :func:`driver_programs`."""
    search_path = search_path or os.environ.get("PATH", os.defpath)
    out: list[str] = []
    todo: list[tuple[str, int]] = [(exe, 0), *((e, 1) for e in extra)]
    while todo:
        path, depth = todo.pop(0)
        real = os.path.realpath(path)
        if real in out or not os.path.isfile(real):
            continue
        out.append(real)
        if depth >= _DEPTH:
            continue
        if os.path.basename(real) in CACHES and os.path.basename(path) not in CACHES:
            nxt = _after_cache(os.path.basename(path), real, search_path)
            if nxt:
                todo.append((nxt, depth + 1))
        todo.extend((t, depth + 1) for t in _script_targets(real))
    return out


def driver_programs(tool: str, exe: str, run: Capture, resolved: Sequence[str] = ()
                    ) -> list[str]:
    """The programs a compiler driver runs, asked of the driver (gcc and clang:
    ``-print-prog-name``) or found next to it (nvcc, hipcc: next to ``exe`` and to each
    file of the same name in ``resolved`` — the real driver behind a wrapper script)."""
    found: list[str] = []
    if tool in ("cc", "cxx") or tool.endswith(("-gcc", "-g++")):
        progs = ("cc1plus" if tool.endswith(("cxx", "g++")) else "cc1", "as", "ld")
        for p in progs:
            rc, out = run([exe, f"-print-prog-name={p}"])
            name = out.strip().splitlines()[-1] if rc == 0 and out.strip() else ""
            if name and not os.path.isabs(name):
                name = shutil.which(name) or ""
            if name and os.path.isfile(name):
                found.append(name)
    elif tool in ("nvcc", "hipcc"):
        name = os.path.basename(exe)
        dirs = dict.fromkeys([Path(os.path.realpath(exe)).parent,
                              *(Path(f).parent for f in resolved
                                if os.path.basename(f) == name)])
        for here in dirs:
            for rel in ("ptxas", "fatbinary", "nvlink", "../nvvm/bin/cicc", "clang",
                        "../llvm/bin/clang"):
                prog = here / rel
                if prog.is_file():
                    found.append(str(prog.resolve()))
    return found


def identity(files: Sequence[str], version_output: str) -> tuple[str, list[FileStat]]:
    """sha256 over the version output and each file's content, and the files' stats (for
    the cache that avoids re-reading them)."""
    h = hashlib.sha256(version_output.strip().encode())
    stats: list[FileStat] = []
    for f in files:
        st = _stat(f)
        if st is None:
            h.update(f"\0{f}\0missing".encode())
            continue
        h.update(f"\0{os.path.basename(f)}\0{file_sha256(Path(f))}".encode())
        stats.append(st)
    return h.hexdigest(), stats
