"""Replays libamm's recorded compile jobs through the scheduler core with CPU times that
vary from run to run (each drawn from ``[1 − spread, 1 + 1.3 × spread]`` × its recorded
time, slower more often than faster), against plain ``-jN`` given the same times.  The
history builds plan with the mean of ``--history-builds`` earlier builds' times, each drawn
alike.  Prints, over the seeds, builder's wall time over ``-jN``'s, the seconds jobs spent
paused, freezes, requeues, and how often the jobs' memory passed the cap.

    python bench/noisy_replay.py [--spread 0.15] [--seeds 100] [--fixed 5] [--cap 6GiB]
                                 [--history FILE]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys

from cold_replay import NINJA_ORDER, REPO, budget_of, estimates

from builder.memory.replay import Outcome, fixed, load_traces, replay
from builder.memory.tuning import TUNING
from builder.recipe.validate import parse_size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spread", type=float, default=0.15)
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--fixed", type=int, default=5, help="the fixed -jN to compare with")
    ap.add_argument("--cap", default="6GiB")
    ap.add_argument("--history", default=str(REPO / "bench" / "data" /
                                             "h100-libamm-history.json"))
    ap.add_argument("--history-builds", type=int, default=TUNING.keep_cpus, metavar="K")
    args = ap.parse_args()
    from pathlib import Path

    traces = load_traces(Path(args.history))
    order = [f for f in NINJA_ORDER if f in traces]
    cap, budget = parse_size(args.cap), budget_of(args.cap)
    cold = estimates(traces)
    outs: dict[str, list[tuple[Outcome, float]]] = {"with history": [], "cold": []}
    walls, over = [], 0
    for seed in range(args.seeds):
        rng = random.Random(seed)

        def drawn(rng: random.Random = rng) -> dict[str, float]:
            return {f: t.cpu * rng.uniform(1 - args.spread, 1 + 1.3 * args.spread)
                    for f, t in traces.items()}

        actual = drawn()
        earlier = [drawn() for _ in range(args.history_builds)]
        mean = {f: statistics.mean(b[f] for b in earlier) for f in traces}
        wall, most = fixed(traces, order, args.fixed, actual)
        walls.append(wall)
        over += int(most > cap)
        for label, est in (("with history", estimates(traces, mean)), ("cold", cold)):
            out = replay(traces, est, order, budget, 16, actual=actual)
            outs[label].append((out, out.wall / wall))
    print(f"libamm, {len(traces)} TUs, CPU times ±{args.spread:.0%} over {args.seeds} seeds; "
          f"cap {args.cap}: -j{args.fixed} median {statistics.median(walls):.1f} s, its jobs "
          f"held more than the cap in {over} of {args.seeds}")
    for label, rows in outs.items():
        r = [x for _, x in rows]
        print(f"builder, {label:13} × -j{args.fixed}: median {statistics.median(r):.3f}, "
              f"mean {statistics.mean(r):.3f}, worst {max(r):.3f}; paused "
              f"{statistics.mean(o.paused for o, _ in rows):.1f} job-s, freezes "
              f"{statistics.mean(o.freezes for o, _ in rows):.1f}, requeues "
              f"{sum(o.requeues for o, _ in rows)}, above the cap in "
              f"{sum(o.most > cap for o, _ in rows)} of {args.seeds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
