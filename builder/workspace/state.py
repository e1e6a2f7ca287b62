"""Read what already exists in the workspace, for the (pure) resolver.

Source trees are hashed by content; published installs count only when their
manifest is complete and every file it lists is present with its recorded size
(a full sha256 check is ``builder verify``).  The result is a :class:`State`
value handed to :func:`builder.resolve.resolver.resolve`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builder.memory.history import History
from builder.recipe.model import Recipe
from builder.source.digest import compile_units, tree_digest
from builder.source.fetch import is_fetched
from builder.util.files import file_sha256
from builder.workspace.paths import Workspace

__all__ = ["State", "manifest_complete", "read_manifest", "read_state"]


@dataclass(frozen=True)
class State:
    """What already exists in the workspace (read by :mod:`builder.workspace.state`)."""

    source_digests: tuple[tuple[str, str], ...] = ()
    file_digests: tuple[tuple[str, str], ...] = ()
    installed: frozenset[str] = frozenset()  # variant keys with a complete install
    kernel_artifacts: frozenset[str] = frozenset()  # artifact keys in the kernel cache
    kernel_installs: tuple[tuple[str, str], ...] = ()  # (install folder, variant key)
    fetched: frozenset[str] = frozenset()  # keys of complete git/url source folders
    #: source root → its translation units (path relative to the root, includes seen)
    compile_units: tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], ...] = ()
    wheels: frozenset[str] = frozenset()  # wheel files already built
    #: absolute source file → (measured peak bytes, seconds, memory curve) from the history
    measured: tuple[tuple[str, int, float, tuple[float, ...]], ...] = ()
    remote_keys: frozenset[str] = frozenset()  # variant keys published on Request.remote
    notes: tuple[str, ...] = field(default=())


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
        if r.build_system in ("cmake", "python", "xmake") and r.sources and \
                r.sources[0].kind == "path":
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
