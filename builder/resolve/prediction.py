"""The memory forecast of a variant's build (pure, like the resolver): its translation
units, each estimated (:mod:`builder.memory.estimate`), merged as CMake's unity build
merges them, and the admission policy simulated over them (:mod:`builder.memory.forecast`)
— what ``builder plan`` shows and the build's broker starts from.

The forecast is a pure function of values the variants of one source folder mostly share
(a backend or build type apart): it is made once per distinct input, so that planning a
recipe of thousands of variants does not estimate each file thousands of times."""

from __future__ import annotations

import functools
from pathlib import Path

from builder import backends as registry
from builder.memory.estimate import estimate, nvcc_shape
from builder.memory.forecast import simulate
from builder.memory.remote import Pool
from builder.plan.payloads import HeavyJob, Prediction
from builder.recipe.subst import substitute
from builder.resolve.steps import VariantContext

__all__ = ["memory_prediction", "switch"]

#: the forecast of a set of jobs, made once: the variants of one source folder (a backend,
#: build type or Python apart) often ask for the same one, and it is pure
_forecast = functools.lru_cache(maxsize=256)(simulate)


def switch(value: bool | str, vals: dict[str, str]) -> bool:
    """A memory switch: a bool, or ``${options.NAME}`` naming a bool option."""
    if isinstance(value, bool):
        return value
    return substitute(value, vals) == "ON"


#: what CMake's unity build merges into one translation unit (C and C++ only)
_UNITY_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++")


def _units(ctx: VariantContext) -> list[tuple[str, tuple[str, ...]]]:
    """The translation units this variant compiles: those of its source folder (a patched
    copy has its original's), less the files only another backend compiles (a CPU build
    never compiles a ``.cu``)."""
    root = ctx.source_root()
    units = ctx.units.get(root)
    src = ctx.recipe.sources[0] if ctx.recipe.sources else None
    if units is None and src is not None and src.kind == "path":
        units = ctx.units.get(str(Path(src.location) / src.subdir) if src.subdir
                              else src.location)
    claimed = _claimed()
    return [(rel, inc) for rel, inc in units or ()
            if claimed.get(_suffix(rel), ctx.kind) == ctx.kind]


@functools.cache
def _claimed() -> dict[str, str]:
    """The backend that compiles each source suffix (``.cu``: cuda), from the registry."""
    return {sfx: be.name for be in registry.backends() for sfx in be.source_suffixes}


def _suffix(rel: str) -> str:
    """``Path(rel).suffix`` without making a path: the last dot of the file name, unless
    the name starts or ends with it."""
    name = rel.rpartition("/")[2]
    i = name.rfind(".")
    return name[i:] if 0 < i < len(name) - 1 else ""


def _unity(jobs: list[tuple[str, int, float, float, tuple[float, ...]]], batch: int
           ) -> list[tuple[str, int, float, float, tuple[float, ...]]]:
    """The jobs of a unity build: C/C++ files merged ``batch`` at a time (as CMake does, in
    order), each batch as heavy as its heaviest file and as long as all of them."""
    merged = [j for j in jobs if j[0].endswith(_UNITY_SUFFIXES)]
    out = [j for j in jobs if not j[0].endswith(_UNITY_SUFFIXES)]
    for n, i in enumerate(range(0, len(merged), max(batch, 1))):
        part = merged[i:i + max(batch, 1)]
        cpu = sum(j[3] for j in part) if all(j[3] for j in part) else 0.0
        out.append((f"unity_{n}_cxx.cxx ({len(part)} files)", max(j[1] for j in part),
                    sum(j[2] for j in part), cpu, ()))
    return out


def memory_prediction(ctx: VariantContext) -> Prediction:
    """Estimate every translation unit and simulate the admission policy: predicted
    wall time, peak reserved memory, parallelism and the heaviest jobs."""
    root = ctx.source_root()
    # nvcc compiles each .cu for every arch, --threads of them at a time
    threads, _ = nvcc_shape(ctx.flags().cuda)
    archs = max(len(ctx.variant.archs), 1) if ctx.kind == "cuda" else 1
    units = tuple(_units(ctx))
    # by recipe and path below the source root (memory.compileid); older histories
    # named files by their absolute path
    hists = tuple((ctx.measured.get(f"{ctx.recipe.name}:{rel}") or
                   ctx.measured.get(str(Path(root) / rel))) if ctx.measured else None
                  for rel, _ in units)
    unity = ctx.recipe.memory.unity  # a bool, or ${options.NAME} (then substituted)
    merged = ctx.recipe.build_system == "cmake" and unity is not False and \
        switch(unity, ctx.values() if isinstance(unity, str) else {})
    m = ctx.recipe.memory
    return _prediction(units, hists, m.default, m.per_file, threads, archs,
                       m.unity_batch_size if merged else None, ctx.budget, ctx.jobs,
                       ctx.remote)


@functools.lru_cache(maxsize=256)
def _prediction(units: tuple[tuple[str, tuple[str, ...]], ...],
                hists: tuple[tuple[int, float, tuple[float, ...]] | None, ...],
                recipe_default: int, recipe_globs: tuple[tuple[str, int], ...],
                threads: int, archs: int, unity_batch: int | None, budget: int,
                slots: int, remote: Pool | None = None) -> Prediction:
    """:func:`memory_prediction` of its inputs (pure), made once per distinct input: the
    variants of one source folder (a backend or build type apart) mostly share it.
    ``unity_batch``: the unity build's batch size (None: no unity build)."""
    jobs = []
    heavy = []
    for (rel, includes), hist in zip(units, hists, strict=True):
        est = estimate(rel, includes, recipe_default=recipe_default,
                       recipe_globs=recipe_globs,
                       history_file={"peak": hist[0], "seconds": hist[1], "cpu": hist[1],
                                     "curve": hist[2]} if hist else None,
                       nvcc_threads=threads, nvcc_archs=archs)
        jobs.append((rel, est.reserve, est.seconds, est.cpu, est.curve))
        heavy.append((est.peak, rel, est.source))
    if unity_batch is not None:
        jobs = _unity(jobs, unity_batch)
    pred = _forecast(tuple(jobs), budget, slots, remote=remote)
    heavy.sort(reverse=True)
    lightest = HeavyJob(heavy[-1][1], heavy[-1][0], heavy[-1][2]) if heavy else None
    return Prediction(jobs=pred.jobs, wall=round(pred.wall, 1), peak=pred.peak,
                      parallelism=round(pred.parallelism, 2), budget=budget,
                      heaviest=tuple(HeavyJob(f, p, src) for p, f, src in heavy[:5]),
                      lightest=lightest, remote=pred.remote)
