"""A compile job's predicted peak memory and CPU time.

Order of trust: the peak *measured* for the same file, flags and compiler in an
earlier build (build history; stable to < 0.05 % run to run), then the same file
with other flags, then the recipe's ``memory.per_file`` globs / ``memory.default``,
then priors by the umbrella header the translation unit includes
(``data/memory_priors.json``).  Each source gets a safety margin on top.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..backends import data_table

_INCLUDE = re.compile(rb'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
CUDA_SUFFIXES = (".cu",)
SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".cu", ".hip")


@dataclass(frozen=True)
class Estimate:
    peak: int  # predicted peak bytes
    seconds: float  # predicted CPU seconds
    source: str  # history | history-file | recipe | prior:<header> | default
    reserve: int  # what the scheduler reserves: peak × the source's margin


@cache
def _priors() -> dict[str, Any]:
    table: dict[str, Any] = data_table("memory_priors.json")
    return table


def scan_includes(path: Path, roots: tuple[Path, ...] = (), depth: int = 3) -> tuple[str, ...]:
    """Includes of ``path``, following quoted/project headers found under ``roots``."""
    seen: set[Path] = set()
    found: list[str] = []

    def visit(p: Path, d: int) -> None:
        if p in seen or d < 0:
            return
        seen.add(p)
        try:
            head = p.read_bytes()[:400_000]
        except OSError:
            return
        for m in _INCLUDE.finditer(head):
            inc = m.group(1).decode(errors="replace")
            found.append(inc)
            for base in (p.parent, *roots):
                cand = base / inc
                if cand.is_file():
                    visit(cand, d - 1)
                    break

    visit(path, depth)
    return tuple(dict.fromkeys(found))


def prior(includes: tuple[str, ...], cuda: bool, nvcc_threads: int = 1) -> Estimate:
    table = _priors()
    margin = float(table["margin"]["prior"])
    for row in table["headers"]:
        if row["include"] in includes:
            peak = int(row.get("nvcc_peak", row["peak"]) if cuda else row["peak"])
            secs = float(row.get("nvcc_seconds", row["seconds"]) if cuda else row["seconds"])
            if cuda:
                peak *= max(nvcc_threads, 1)
            return Estimate(peak, secs, f"prior:{row['include']}", int(peak * margin))
    d = table["default"]
    peak = int(d["nvcc_peak"] if cuda else d["peak"]) * (max(nvcc_threads, 1) if cuda else 1)
    return Estimate(peak, float(d["nvcc_seconds"] if cuda else d["seconds"]), "default",
                    int(peak * margin))


def estimate(rel_file: str, includes: tuple[str, ...], *, recipe_default: int = 0,
             recipe_globs: tuple[tuple[str, int], ...] = (),
             history: dict[str, Any] | None = None,
             history_file: dict[str, Any] | None = None, nvcc_threads: int = 1) -> Estimate:
    """Pure: the inputs were read by the caller."""
    margins = _priors()["margin"]
    cuda = rel_file.endswith(CUDA_SUFFIXES)
    base = prior(includes, cuda, nvcc_threads)
    if history:
        peak = int(history["peak"])
        return Estimate(peak, float(history.get("seconds", base.seconds)), "history",
                        int(peak * float(margins["history"])))
    if history_file:
        peak = int(history_file["peak"])
        return Estimate(peak, float(history_file.get("seconds", base.seconds)), "history-file",
                        int(peak * float(margins["recipe"])))
    for glob, size in recipe_globs:
        if fnmatch.fnmatch(rel_file, glob):
            return Estimate(size, base.seconds, "recipe", int(size * float(margins["recipe"])))
    if recipe_default and base.source == "default":
        return Estimate(recipe_default, base.seconds, "recipe",
                        int(recipe_default * float(margins["recipe"])))
    return base
