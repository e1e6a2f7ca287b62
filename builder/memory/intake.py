"""What the broker knows of a compile job when its launcher asks: where its file lies
in the project, its key in the build history, and its memory estimate (history, the
recipe's globs, priors by umbrella header and nvcc's shape) — before any policy.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from builder.memory.compileid import compile_id, compile_key
from builder.memory.estimate import Estimate, estimate, nvcc_shape, scan_includes
from builder.memory.history import History, flags_hash, job_key
from builder.memory.policy import Model

__all__ = ["CACHES", "BrokerConfig", "Intake", "intake"]

#: compiler caches that may be chained after the launcher: a hit runs no compiler, so its
#: measurement says nothing about the compile (sccache compiles in its server, out of sight)
CACHES = ("ccache", "sccache", "buildcache")


@dataclass
class BrokerConfig:
    budget: int
    slots: int
    source_root: str
    build_dir: str
    history_path: str
    recipe_default: int = 0
    recipe_globs: tuple[tuple[str, int], ...] = ()
    lowmem_flags: tuple[str, ...] = ()
    #: the recipe: with it, jobs are named in the history by what determines their
    #: compile (memory.compileid), not by absolute paths; "": by absolute path
    scope: str = ""
    include_roots: tuple[str, ...] = field(default_factory=tuple)
    model: Model | None = None  # None: ``ramp`` of memory_priors.json
    time_model: bool = True  # False: reserve every job's peak for its whole life
    pause: bool = True  # run the guard (pause/resume); False: admission alone
    learn: bool = True  # re-estimate waiting jobs from their group's jobs measured so far
    #: watch the build cgroup's measured memory and freeze/thaw/requeue (:mod:`.backstop`)
    backstop: bool = True
    backstop_period: float = 0.05
    #: with the backstop watching: admit jobs never measured on their prior's CPU time and
    #: the generic ramp (not their peak for their whole life), and without the prior's margin
    speculate: bool = True
    #: seconds to gather the burst of jobs ninja starts at once before the first grant on
    #: an idle machine, so that largest-first applies to all of them, not the first to call
    settle: float = 0.25


@dataclass(frozen=True)
class Intake:
    rel: str  # the file, relative to the source root where it lies below it
    file: str  # its name in the history (by compile id within a recipe's scope)
    key: str  # its history key
    est: Estimate
    link: bool
    threads: int  # nvcc --threads (1 otherwise)
    cached: bool  # a compiler cache runs first: a hit measures nothing


def intake(msg: dict[str, Any], cfg: BrokerConfig, history: History) -> Intake:
    """The job a launcher's ``acquire`` message names, estimated."""
    file = str(msg.get("file", ""))
    argv = [str(a) for a in msg.get("argv", [])]
    root = Path(cfg.source_root)
    try:
        rel = str(Path(file).resolve().relative_to(root.resolve()))
    except ValueError:
        rel = file
    link = msg.get("kind") == "link"
    includes = () if link else scan_includes(Path(file), (root, *map(Path, cfg.include_roots)))
    if cfg.scope:
        file = compile_id(file, str(root), cfg.build_dir, cfg.scope)
        key = compile_key(file, argv, str(msg.get("file", "")), str(root), cfg.build_dir,
                          link=link)
    else:
        key = job_key(file, flags_hash(argv, cfg.build_dir), argv[0] if argv else "")
    threads, archs = nvcc_shape(argv)
    est = estimate(rel, includes, recipe_default=cfg.recipe_default,
                   recipe_globs=cfg.recipe_globs, history=history.get(key),
                   history_file=history.for_file(file), nvcc_threads=threads,
                   nvcc_archs=archs)
    if link:  # links learn from links, not from the compiles of the default prior
        est = replace(est, group="" if est.source.startswith("history") else "link",
                      family="")
    cached = bool(argv) and Path(argv[0]).name in CACHES
    return Intake(rel, file, key, est, link, max(threads, 1), cached)
