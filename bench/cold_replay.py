"""Replays libamm's recorded compile jobs through the scheduler core (builder.memory.replay):
what a cold build (recipe estimates) and one with history reach at a cap, against plain
``-jN`` in ninja's order.  tests/unit/test_replay.py bounds the same replays.

    python bench/cold_replay.py [--history FILE] [--cap 6GiB] [--cores 16]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builder.memory.core import Switches  # noqa: E402
from builder.memory.estimate import Estimate, estimate, scan_includes  # noqa: E402
from builder.memory.replay import Trace, fixed, load_traces, replay  # noqa: E402
from builder.recipe.recipeset import load_recipe  # noqa: E402
from builder.recipe.validate import parse_size  # noqa: E402
from builder.resolve.request import MIN_RESERVE  # noqa: E402

GiB = 2**30
#: ninja's order of libamm's compile jobs (its .ninja_log of a plain -jN build)
NINJA_ORDER = ("src/core.cpp", "src/algorithms/crs.cpp", "src/algorithms/exact.cpp",
               "src/algorithms/importance.cpp", "src/algorithms/count_sketch.cpp",
               "src/algorithms/random_projection.cpp", "src/algorithms/cooccurring_fd.cpp",
               "src/algorithms/block_lra.cpp", "src/algorithms/pq.cpp", "python/bindings.cpp",
               "tests/test_sampling.cpp", "tests/test_sketching.cpp", "tests/test_lowrank.cpp")


def estimates(traces: dict[str, Trace], history: dict[str, float] | None = None
              ) -> dict[str, Estimate]:
    """Each job's estimate: the recipe's (cold), or from a history of CPU times."""
    recipe = load_recipe(REPO / "recipes" / "libamm.yaml")
    root = REPO / "sources" / "libamm"
    out = {}
    for f, t in traces.items():
        rec = None if history is None else {"peak": t.peak, "prev_peak": t.peak, "runs": 2,
                                            "cpu": history[f], "curve": list(t.curve)}
        out[f] = estimate(f, scan_includes(root / f, (root,)), history=rec,
                          recipe_globs=recipe.memory.per_file,
                          recipe_default=recipe.memory.default)
    return out


def budget_of(cap: str) -> int:
    size = parse_size(cap)
    return size - max(MIN_RESERVE, size * 3 // 100)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--history", type=Path, default=REPO / "bench" / "data" /
                    "h100-libamm-history.json")
    ap.add_argument("--cap", default="6GiB", help="the memory cap (budget: cap less reserve)")
    ap.add_argument("--cores", type=int, default=16)
    args = ap.parse_args()
    traces = load_traces(args.history)
    order = [f for f in NINJA_ORDER if f in traces]
    budget = budget_of(args.cap)
    cold = estimates(traces)
    known = estimates(traces, {f: t.cpu for f, t in traces.items()})
    print(f"libamm, {len(traces)} compile jobs from {args.history.name}; cap {args.cap}, "
          f"budget {budget / GiB:.2f} GiB, {args.cores} cores")
    rows = [("cold, backstop watching", replay(traces, cold, order, budget, args.cores)),
            ("cold, admission alone", replay(traces, cold, order, budget, args.cores,
                                             watched=False)),
            ("cold, no learning", replay(traces, cold, order, budget, args.cores,
                                         switches=Switches(learn=False))),
            ("with history, backstop watching", replay(traces, known, order, budget,
                                                       args.cores)),
            ("with history, admission alone", replay(traces, known, order, budget,
                                                     args.cores, watched=False))]
    for label, out in rows:
        print(f"{label:40} {out.wall:6.1f} s  holds up to {out.most / GiB:.2f} GiB, "
              f"{out.freezes} freezes, {out.requeues} requeues"
              f"{'  (more than the budget)' if out.most > budget else ''}")
    for n in range(3, 7):
        wall, most = fixed(traces, order, n)
        print(f"{'fixed -j' + str(n):40} {wall:6.1f} s  holds up to {most / GiB:.2f} GiB"
              f"{'  (more than the budget)' if most > budget else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
