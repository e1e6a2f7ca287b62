"""How fast is planning?

1. `builder plan --all` over the bundled recipes' whole matrix, in a fresh process
   (target ≤ 0.5 s; the host probe cache is warmed first, as in normal use).
2. Planning N generated recipes (N = 250, 500, 1000; target ≤ 5 s for 1000 and linear
   growth), in-process, with fixed host facts so that no probing is timed.

Prints the figures and the ratio of each size to the 250 run (linear ≈ N/250).
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builder.host.facts import load_host_facts  # noqa: E402
from builder.recipe.recipeset import RecipeSet  # noqa: E402
from builder.resolve.request import Request  # noqa: E402
from builder.resolve.resolver import resolve  # noqa: E402
from builder.workspace.paths import Workspace  # noqa: E402
from builder.workspace.state import read_state  # noqa: E402

RECIPE = """\
package:
  name: gen{i}
  version: "1.{i}.0"
source:
  path: ../src
options:
  shared: {{type: bool, default: true, cmake: BUILD_SHARED_LIBS}}
  level: {{type: str, default: fast, allowed: [fast, safe]}}
backends:
  cpu: {{}}
  cuda:
    tools: {{nvcc: ">=12.0"}}
    archs: [sm_80, sm_86, sm_89, sm_90]
flags:
  release: {{cxx: [-O2], cuda: [-O3]}}
defines:
  GEN_ARCHS: "${{archs.cmake}}"
  GEN_LEVEL: "${{options.level}}"
{requires}
"""


def fresh_process_plan_all() -> float:
    cmd = [sys.executable, "-m", "builder", "plan", "--all", "--skip-unsupported",
           "--format", "json"]
    subprocess.run(cmd, cwd=REPO, check=True, capture_output=True)  # warm the probe cache
    times = []
    for _ in range(5):
        t = time.perf_counter()
        subprocess.run(cmd, cwd=REPO, check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def generated(n: int) -> float:
    tmp = Path(tempfile.mkdtemp(prefix="plan-speed-"))
    try:
        (tmp / "src").mkdir()
        (tmp / "src" / "CMakeLists.txt").write_text("project(x)\n")
        rd = tmp / "recipes"
        rd.mkdir()
        for i in range(n):
            req = f"requires:\n  recipes: [{{name: gen{i - 1}}}]" if i % 10 else ""
            (rd / f"gen{i}.yaml").write_text(RECIPE.format(i=i, requires=req))
        host = load_host_facts(REPO / "tests" / "fixtures" / "hosts" / "linux-cuda13.json")
        t = time.perf_counter()
        ws = Workspace.at(tmp)
        rs = RecipeSet.load(ws.recipes_dir)
        plan = resolve(rs.recipes, rs, Request(env=(("HOME", "/home/u"),)), host,
                       read_state(ws, rs.recipes), ws)
        elapsed = time.perf_counter() - t
        assert len(plan.variants) == 2 * n
        return elapsed
    finally:
        shutil.rmtree(tmp)


def main() -> int:
    fresh = fresh_process_plan_all()
    print(f"builder plan --all (bundled recipes, fresh process, median of 5): {fresh:.3f} s "
          f"(target ≤ 0.5 s) {'OK' if fresh <= 0.5 else 'OVER'}")
    base = None
    ok = fresh <= 0.5
    for n in (250, 500, 1000):
        t = generated(n)
        base = base or t
        print(f"plan {n:5d} generated recipes ({2 * n} variants): {t:.3f} s  "
              f"ratio to 250: {t / base:.2f} (linear: {n / 250:.2f})")
        if n == 1000:
            ok = ok and t <= 5.0
            print(f"target for 1000: ≤ 5 s {'OK' if t <= 5.0 else 'OVER'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
