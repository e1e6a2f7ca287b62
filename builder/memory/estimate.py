"""A compile job's predicted peak memory and CPU time.

Order of trust: the peak *measured* for the same file, flags and compiler in an
earlier build (build history; stable to < 0.05 % run to run), then the same file
with other flags, then the recipe's ``memory.per_file`` globs / ``memory.default``,
then priors by the umbrella header the translation unit includes
(``resources/memory_priors.json``).  Each source gets its safety margin on top
(``Tuning.margin_*``: the less trusted the source, the larger; a peak measured twice alike
gets the smallest, since the same compile's peak varies < 0.05 % run to run and the margin
covers only what 0.1 s sampling can miss near the peak).  Only a measurement gives a
CPU time (``Estimate.cpu``), which lets the scheduler use its time model (``policy.py``).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from builder.memory.history import typical_cpu
from builder.memory.policy import after_peak, rising, upper
from builder.memory.suffixes import CUDA_SUFFIXES, DEVICE_SUFFIXES, SOURCE_SUFFIXES
from builder.memory.tuning import TUNING, Tuning
from builder.resources import data_table

__all__ = [
    "CUDA_SUFFIXES",
    "DEVICE_SUFFIXES",
    "SOURCE_SUFFIXES",
    "Estimate",
    "estimate",
    "learned",
    "nvcc_shape",
    "prior",
    "scan_includes",
]

_INCLUDE = re.compile(rb'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


@dataclass(frozen=True)
class Estimate:
    peak: int  # predicted peak bytes
    seconds: float  # predicted CPU seconds
    source: str  # history | history-file | recipe | prior:<header> | default
    reserve: int  # what the scheduler reserves: peak × the source's margin
    cpu: float = 0.0  # measured CPU seconds (history only); 0: unknown
    #: jobs of one kind (a recipe glob, an umbrella header): what one of them measured in
    #: this build predicts the others better than the recipe value or the prior ("": none)
    group: str = ""
    #: its measured memory curve (``policy.curve_at``), with ``cpu`` only; (): none
    curve: tuple[float, ...] = ()
    #: the umbrella header's group (``prior:<header>:<kind>:<threads>[x<archs>]``, archs
    #: for nvcc only; "": none): when
    #: no job of its own group was measured yet, one with the same header predicts it
    family: str = ""
    #: CPU seconds that predict its end, when longer than ``cpu`` (which predicts how
    #: fast its memory may rise); 0: ``cpu``
    span: float = 0.0
    #: the prior of its umbrella header (or the default prior): what a sibling measured
    #: lighter does not lower it below (``jobs.relearn``); 0: none
    floor: int = 0
    #: a device compile's share of its peak it holds after its single batch of cicc runs
    #: (``policy.released``), by the priors: its host compile of the same headers; 0: none
    fall: float = 0.0


@cache
def _priors() -> dict[str, Any]:
    table: dict[str, Any] = data_table("memory_priors.json")
    return table


def _history_reserve(rec: dict[str, Any], tuning: Tuning) -> tuple[int, int]:
    """(peak, reserve) of a measured job: a peak measured again within 1 % gets the
    small repeat margin on the larger of the two."""
    peak = int(rec["peak"])
    prev = int(rec.get("prev_peak", 0))
    if int(rec.get("runs", 1)) >= 2 and prev and abs(peak - prev) <= 0.01 * peak:
        top = max(peak, prev)
        return top, int(top * tuning.margin_history_repeat)
    return peak, int(peak * tuning.margin_history)


def _curve(rec: dict[str, Any], tuning: Tuning) -> tuple[float, ...]:
    """The higher of the last two measured memory curves of a history record — but a curve
    that only rises next to one that falls after its peak was recorded by an older builder
    that kept a running maximum: it would hide the fall, so that nothing is released
    (``policy.released``) until the third build, and is left out."""
    curve = [float(x) for x in rec.get("curve", ())]
    prev = [float(x) for x in rec.get("prev_curve", ())]
    if prev and after_peak(curve, tuning) is not None and list(rising(prev)) == prev:
        prev = []
    return upper(curve, prev)


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


#: virtual archs nvcc 13.0 compiles for ``-arch=all`` / ``-arch=all-major`` (``--dryrun``)
_ARCH_ALIASES = {"all": 12, "all-major": 6, "native": 1}
_VIRTUAL = re.compile(r"arch=(compute_\w+)")


def nvcc_shape(argv: list[str] | tuple[str, ...]) -> tuple[int, int]:
    """``(threads, archs)`` of an nvcc command line: ``--threads``/``-t`` (0: one thread
    per arch) and how many virtual archs it compiles device code for — the cicc runs, each
    followed by ptxas: one per distinct ``compute_XX`` in ``-gencode``/``--generate-code``,
    plus one for ``-arch``/``--gpu-architecture`` (``-code`` only adds ptxas runs for the
    same cicc output); ``all``/``all-major`` count what nvcc 13 expands them to, and a
    command with none compiles for nvcc's default arch: 1.  nvcc runs them ``threads`` at
    a time, so its peak is about one arch's × ``min(threads, archs)``."""
    threads, virtual, arch = 1, set(), ""
    args = list(argv)
    for i, a in enumerate(args):
        flag, eq, val = a.partition("=")
        nxt = args[i + 1] if i + 1 < len(args) else ""
        if flag in ("--threads", "-t") or (a.startswith("-t") and a[2:].isdigit()):
            v = val if eq else a[2:] if flag not in ("--threads", "-t") else nxt
            if v.isdigit():
                threads = int(v)
        elif flag in ("-gencode", "--generate-code"):
            virtual.update(_VIRTUAL.findall(val if eq else nxt))
        elif flag in ("-arch", "--gpu-architecture"):
            arch = val if eq else nxt  # the last one wins, as in nvcc
    archs = len(virtual) + (_ARCH_ALIASES.get(arch, 1) if arch else 0)
    archs = max(archs, 1)
    return (threads if threads > 0 else archs), archs


def prior(includes: tuple[str, ...], cuda: bool, nvcc_threads: int = 1,
          nvcc_archs: int = 1, tuning: Tuning = TUNING) -> Estimate:
    """The prior of a translation unit by the first umbrella header it includes.  An nvcc
    compile for ``nvcc_archs`` archs, ``nvcc_threads`` at a time, peaks at the first arch's
    ``nvcc_peak`` plus ``nvcc_arch_peak`` (default ``nvcc_peak``) for every further arch
    compiled at once, and takes ``nvcc_seconds`` plus ``nvcc_arch_seconds`` (default
    ``nvcc_seconds``) per further arch.  One that compiles all its archs at once falls
    after that peak to its host compile (``fall``: the header's host ``peak`` over it)."""
    table = _priors()
    margin = tuning.margin_prior
    row: dict[str, Any] = next((r for r in table["headers"] if r["include"] in includes),
                               table["default"])
    source = f"prior:{row['include']}" if "include" in row else "default"
    if not cuda or "nvcc_peak" not in row:
        return Estimate(int(row["peak"]), float(row["seconds"]), source,
                        int(int(row["peak"]) * margin))
    archs = max(nvcc_archs, 1)
    together = min(max(nvcc_threads, 1), archs)
    first, secs = int(row["nvcc_peak"]), float(row["nvcc_seconds"])
    peak = first + (together - 1) * int(row.get("nvcc_arch_peak", first))
    secs += (archs - 1) * float(row.get("nvcc_arch_seconds", secs))
    # all its archs' cicc runs at once, one peak; then nvcc compiles the host code: a
    # g++ run over the same headers, which holds what their host prior says
    fall = int(row["peak"]) / peak if together == archs else 0.0
    return Estimate(peak, secs, source, int(peak * margin), fall=fall)


def _floor(base: Estimate, tuning: Tuning) -> int:
    """The least a sibling's measurement may lower a job estimated from ``base`` (a prior)
    to (``Tuning.plausible_header``, ``Tuning.plausible_default``)."""
    header = base.source.startswith("prior:")
    return int(base.peak * (tuning.plausible_header if header else tuning.plausible_default))


def estimate(rel_file: str, includes: tuple[str, ...], *, recipe_default: int = 0,
             recipe_globs: tuple[tuple[str, int], ...] = (),
             history: dict[str, Any] | None = None,
             history_file: dict[str, Any] | None = None, nvcc_threads: int = 1,
             nvcc_archs: int = 1, tuning: Tuning = TUNING) -> Estimate:
    """Pure: the inputs were read by the caller (``nvcc_threads``, ``nvcc_archs``: from
    :func:`nvcc_shape` of the compile's argv)."""
    cuda = rel_file.endswith(CUDA_SUFFIXES)
    base = prior(includes, cuda, nvcc_threads, nvcc_archs, tuning)
    # the time model's curve was measured for host compilers: nvcc/hipcc run several
    # programs one after the other (cicc per arch, ptxas), whose peaks may come early
    timed = not rel_file.endswith(DEVICE_SUFFIXES)
    kind = "device" if rel_file.endswith(DEVICE_SUFFIXES) else "host"
    # jobs compiling as many archs as many at a time predict each other
    shape = f"{kind}:{nvcc_threads}" + (f"x{nvcc_archs}" if cuda else "")
    family = f"{base.source}:{shape}" if base.source.startswith("prior:") else ""
    if history:
        peak, reserve = _history_reserve(history, tuning)
        # a device compile's own measured curve — the running maximum of what it held —
        # bounds its early peaks too; only the generic ramp does not
        curve = _curve(history, tuning)
        cpu = typical_cpu(history) if timed or curve else 0.0
        curve = curve if cpu else ()
        return Estimate(peak, float(history.get("seconds", base.seconds)), "history",
                        reserve, cpu, curve=curve, family=family)
    if history_file:
        # another flag set's measurement (or, in ``builder plan``, the file's last one)
        peak = int(history_file["peak"])
        cpu = typical_cpu(history_file) if timed else 0.0
        return Estimate(peak, float(history_file.get("seconds", base.seconds)), "history-file",
                        int(peak * tuning.margin_recipe), cpu,
                        curve=_curve(history_file, tuning) if cpu else (), family=family)
    for glob, size in recipe_globs:
        if fnmatch.fnmatch(rel_file, glob):
            return Estimate(size, base.seconds, "recipe", int(size * tuning.margin_recipe),
                            group=f"recipe:{glob}:{kind}", family=family,
                            floor=_floor(base, tuning))
    if recipe_default and base.source == "default":
        return Estimate(recipe_default, base.seconds, "recipe",
                        int(recipe_default * tuning.margin_recipe),
                        group=f"recipe-default:{kind}", floor=_floor(base, tuning))
    return replace(base, group=f"{base.source}:{shape}", family=family,
                   floor=_floor(base, tuning))


def learned(est: Estimate, peak: int, cpu: float, curve: tuple[float, ...] = (),
            agreed: bool = False, slowest: float = 0.0, via: str = "",
            tuning: Tuning = TUNING) -> Estimate:
    """The estimate of a job not measured before, from what jobs of its group (or, ``via``
    its umbrella header's family, when none of its group was measured yet) measured
    earlier in this build: the largest peak, the smallest CPU time (a faster job peaks
    sooner, which the time model must not underrate; one faster still is caught by
    ``policy.ahead_of``), the pointwise highest memory curve, and the largest CPU time
    to predict its end.  The margin is smaller once the two largest peaks ``agreed``."""
    timed = cpu
    margin = tuning.margin_learned_again if agreed else tuning.margin_learned
    # a device compile (nvcc: a cicc peak per arch, early) is timed only by a measured curve
    device = ":device" in est.group or ":device" in est.family
    ok = timed > 0.5 and (bool(curve) or not device)
    return Estimate(peak, est.seconds, f"learned:{via or est.group}", int(peak * margin),
                    timed if ok else 0.0, est.group, curve if ok else (), est.family,
                    max(slowest, timed) if ok else 0.0, est.floor)
