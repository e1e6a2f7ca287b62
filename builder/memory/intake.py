"""What the broker knows of a compile job when its launcher asks: where its file lies
in the project, its key in the build history, and its memory estimate (history, the
recipe's globs, priors by umbrella header and nvcc's shape) — before any policy.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from builder.memory.compileid import compile_id, compile_key
from builder.memory.estimate import Estimate, estimate, nvcc_shape, scan_includes
from builder.memory.history import History, flags_hash, job_key
from builder.memory.tuning import TUNING, Tuning
from builder.memory.wire import Acquire

__all__ = ["CACHES", "Intake", "MemorySettings", "intake"]

#: compiler caches that may be chained after the launcher: a hit runs no compiler, so its
#: measurement says nothing about the compile (sccache compiles in its server, out of sight)
CACHES = ("ccache", "sccache", "buildcache")


class MemorySettings(Protocol):
    """What the broker needs of a build: the plan's ``MemoryConfig`` (builder.plan.payloads)
    as it is — the broker reads it directly, nothing is copied.  A protocol, not an import:
    builder.memory and builder.plan are independent layers."""

    @property
    def budget(self) -> int: ...
    @property
    def slots(self) -> int: ...
    @property
    def source_root(self) -> str: ...
    @property
    def build_dir(self) -> str: ...
    @property
    def history_path(self) -> str: ...
    @property
    def recipe_default(self) -> int: ...
    @property
    def recipe_globs(self) -> tuple[tuple[str, int], ...]: ...
    @property
    def lowmem_flags(self) -> tuple[str, ...]: ...
    @property
    def scope(self) -> str: ...


@dataclass(frozen=True)
class Intake:
    rel: str  # the file, relative to the source root where it lies below it
    file: str  # its name in the history (by compile id within a recipe's scope)
    key: str  # its history key
    est: Estimate
    link: bool
    threads: int  # nvcc --threads (1 otherwise)
    cached: bool  # a compiler cache runs first: a hit measures nothing


def intake(msg: Acquire, cfg: MemorySettings, history: History, tuning: Tuning = TUNING,
           include_roots: tuple[str, ...] = ()) -> Intake:
    """The job a launcher's :class:`.wire.Acquire` names, estimated."""
    file = msg.file
    argv = list(msg.argv)
    root = Path(cfg.source_root)
    try:
        rel = str(Path(file).resolve().relative_to(root.resolve()))
    except ValueError:
        rel = file
    link = msg.kind == "link"
    includes = () if link else scan_includes(Path(file), (root, *map(Path, include_roots)))
    if cfg.scope:
        file = compile_id(file, str(root), cfg.build_dir, cfg.scope)
        key = compile_key(file, argv, msg.file, str(root), cfg.build_dir, link=link)
    else:
        key = job_key(file, flags_hash(argv, cfg.build_dir), argv[0] if argv else "")
    threads, archs = nvcc_shape(argv)
    est = estimate(rel, includes, recipe_default=cfg.recipe_default,
                   recipe_globs=cfg.recipe_globs, history=history.get(key),
                   history_file=history.for_file(file), nvcc_threads=threads,
                   nvcc_archs=archs, tuning=tuning)
    if link:  # links learn from links, not from the compiles of the default prior
        est = replace(est, group="" if est.source.startswith("history") else "link",
                      family="")
    cached = bool(argv) and Path(argv[0]).name in CACHES
    return Intake(rel, file, key, est, link, max(threads, 1), cached)
