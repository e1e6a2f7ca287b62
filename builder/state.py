"""Read what already exists in the workspace, for the (pure) resolver.

Source trees are hashed by content; published installs count only when their
manifest is complete and every file it lists is present with its recorded size
(a full sha256 check is ``builder verify``).  The result is a :class:`State`
value handed to :func:`builder.resolve.resolve`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .fetch import is_fetched
from .memory.estimate import SOURCE_SUFFIXES, scan_includes
from .memory.history import History
from .model import Recipe
from .resolve import State
from .workspace import Workspace

SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".builder", "build", ".pytest_cache",
             ".mypy_cache", ".ruff_cache", ".nox", "node_modules"}


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


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


def read_manifest(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def manifest_complete(folder: Path, manifest: dict[str, Any]) -> bool:
    for f in manifest.get("files", ()):
        try:
            if (folder / f["path"]).stat().st_size != f["size"]:
                return False
        except (OSError, KeyError, TypeError):
            return False
    return True


def _is_file(p: Path) -> bool:
    """False also for a name the OS refuses (too long, a NUL byte): recipes are data."""
    try:
        return p.is_file()
    except (OSError, ValueError):
        return False


def read_state(ws: Workspace, recipes: Iterable[Recipe]) -> State:
    source_digests: dict[str, str] = {}
    file_digests: dict[str, str] = {}
    for r in recipes:
        for s in r.sources:
            if s.kind == "path" and s.location not in source_digests:
                source_digests[s.location] = tree_digest(Path(s.location))
        for s in r.sources:
            for patch in s.patches:
                if patch not in file_digests and _is_file(Path(patch)):
                    file_digests[patch] = file_sha256(Path(patch))
        if r.kernels and r.sources and r.sources[0].kind == "path":
            base = Path(r.sources[0].location) / r.sources[0].subdir
            for k in r.kernels:
                for _, rel in k.sources:
                    p = base / rel
                    if str(p) not in file_digests and _is_file(p):
                        file_digests[str(p)] = file_sha256(p)
    installed: set[str] = set()
    install_root = ws.state / "install"
    if install_root.is_dir():
        for mf in install_root.glob("*/*/manifest.json"):
            data = read_manifest(mf)
            if data and data.get("key") and manifest_complete(mf.parent, data):
                installed.add(str(data["key"]))
    artifacts: set[str] = set()
    if ws.kernel_cache.is_dir():
        artifacts = {p.name for p in ws.kernel_cache.iterdir()
                     if p.is_dir() and not p.name.endswith(".partial")}
    kernel_installs: dict[str, str] = {}
    registry = read_manifest(ws.state / "kernel-installs.json") or {}
    for tree, key in registry.items():
        data = read_manifest(Path(tree) / "manifest.json")
        if data and data.get("key") == key and manifest_complete(Path(tree), data):
            kernel_installs[tree] = str(key)
    units: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {}
    for r in recipes:
        if r.build_system == "cmake" and r.sources and r.sources[0].kind == "path":
            root = Path(r.sources[0].location) / r.sources[0].subdir
            if str(root) not in units:
                units[str(root)] = compile_units(root)
    measured = tuple(sorted((f, int(rec["peak"]), float(rec.get("seconds", 0.0)),
                             tuple(float(x) for x in rec.get("curve", ())))
                            for f, rec in History(ws.state / "memory-history.json")
                            .by_file.items() if f and rec.get("peak")))
    wheels = frozenset(str(p) for p in (ws.state / "wheels").glob("*/*/*.whl")) \
        if (ws.state / "wheels").is_dir() else frozenset()
    fetched: set[str] = set()
    if (ws.state / "sources").is_dir():
        fetched = {p.name for p in (ws.state / "sources").iterdir() if is_fetched(p)}
    return State(wheels=wheels, fetched=frozenset(fetched),
                 compile_units=tuple(sorted(units.items())),
                 measured=measured, source_digests=tuple(sorted(source_digests.items())),
                 file_digests=tuple(sorted(file_digests.items())),
                 installed=frozenset(installed), kernel_artifacts=frozenset(artifacts),
                 kernel_installs=tuple(sorted(kernel_installs.items())))
