"""What checking recorded inputs costs a no-op: `builder plan --all` over the bundled
recipes, in a fresh process, when every CMake variant's install carries a record of what
its build read (builder.source.inputs) — target ≤ 1 s, median of ≥ 3 runs.

A real record needs a real build of every bundled recipe; this bench writes the installs'
manifests instead (no files, so they are complete), each with a record as large as a
build against the PyTorch C++ API reads: every file of the recipe's source folder and
every header a TU including <torch/torch.h> reads (``g++ -M``), with their real stat and
sha256.  The plan must then find those variants up to date (it says how many),
which is the work a no-op build does before it says "nothing to do".  Prints the median
and minimum of the runs, with and without the records, and the number of inputs checked.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builder.source.digest import StatCache  # noqa: E402


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    return env


def plan(project: Path) -> tuple[float, dict[str, Any]]:
    cmd = [sys.executable, "-m", "builder", "-C", str(project), "plan", "--all",
           "--skip-unsupported", "--format", "json"]
    t = time.perf_counter()
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=child_env())
    return time.perf_counter() - t, json.loads(done.stdout)


def heavy_inputs() -> list[Path]:
    """The headers a TU including <torch/torch.h> reads, as ``g++ -M`` lists them (the
    whole include folders of torch and libstdc++ where g++ or torch is missing)."""
    include: Path | None = None
    try:
        import torch.utils

        include = Path(torch.utils.cmake_prefix_path).parents[1] / "include"
    except ImportError:
        print("torch is not installed: records hold the C++ headers only")
    gxx = shutil.which("g++")
    if include is not None and gxx:
        with tempfile.TemporaryDirectory() as d:
            tu = Path(d) / "tu.cpp"
            tu.write_text("#include <torch/torch.h>\n")
            done = subprocess.run([gxx, "-std=c++17", "-M", f"-I{include}",
                                   f"-I{include / 'torch/csrc/api/include'}", str(tu)],
                                  capture_output=True, text=True, check=False)
        if done.returncode == 0:
            words = done.stdout.replace("\\\n", " ").split()
            return sorted({Path(w) for w in words[1:] if w.startswith("/")
                           and Path(w).is_file() and w != str(tu)})
    roots = [*([include] if include else []), *sorted(Path("/usr/include/c++").glob("*"))]
    return [p for r in roots if r.is_dir() for p in sorted(r.rglob("*")) if p.is_file()]


def write_installs(data: dict[str, Any], heavy: list[Path]) -> tuple[int, int]:
    """A manifest with a record for every CMake variant to build; (installs, inputs)."""
    cache = StatCache()

    def rec(p: Path) -> list[Any]:
        st = p.stat()
        return [str(p), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino,
                cache.sha256(p, st)]

    common = [rec(p) for p in heavy]
    by_id = {v["id"]: v for v in data["variants"]}
    installs = inputs = 0
    for s in data["steps"]:
        payload = s.get("payload") or {}
        record = payload.get("record")
        v = by_id[s["variant"]]
        if s["kind"] != "publish" or not record or v["status"] != "build":
            continue
        own = [rec(p) for root, _ in record["names"]
               for p in sorted(Path(root).rglob("*")) if p.is_file()]
        manifest = {"key": v["compile_key"], "variant_key": v["key"],
                    "config_key": record["config_key"], "files": [],
                    "record": {"inputs": own + common, "names": record["names"]}}
        prefix = Path(v["prefix"])
        prefix.mkdir(parents=True, exist_ok=True)
        (prefix / "manifest.json").write_text(json.dumps(manifest))
        installs += 1
        inputs += len(own) + len(common)
    return installs, inputs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="runs of each kind (at least 3)")
    args = ap.parse_args()
    runs = max(3, args.runs)
    tmp = Path(tempfile.mkdtemp(prefix="noop-records-"))
    try:
        for sub in ("recipes", "sources"):
            shutil.copytree(REPO / sub, tmp / sub, symlinks=True)
        plan(tmp)  # warm the probe, digest and bytecode caches
        _, data = plan(tmp)
        installs, inputs = write_installs(data, heavy_inputs())
        _, after = plan(tmp)
        # up to date but for a wheel (the installs written here hold no wheel)
        todo = {s["variant"] for s in after["steps"]
                if s["status"] == "build" and not s["id"].endswith("/wheel")}
        cached = sum(1 for v in after["variants"] if v["status"] != "skip" and
                     v["id"] not in todo)
        # interleaved, so that a busy machine weighs on both kinds alike
        folder, away = tmp / ".builder" / "install", tmp / "installs-away"
        without, with_records = [], []
        for _ in range(runs):
            folder.rename(away)
            without.append(plan(tmp)[0])
            away.rename(folder)
            with_records.append(plan(tmp)[0])
        med0, med = statistics.median(without), statistics.median(with_records)
        print(f"plan --all, no installs: median {med0:.3f} s, min {min(without):.3f} s "
              f"({runs} runs)")
        print(f"plan --all, {installs} recorded installs ({inputs} inputs checked, "
              f"{cached} variant(s) up to date): median {med:.3f} s, min "
              f"{min(with_records):.3f} s (target ≤ 1 s; ratio {med:.2f}) "
              f"{'OK' if med <= 1.0 else 'OVER'}; the records cost {med - med0:+.3f} s")
        return 0 if med <= 1.0 and cached >= installs else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
