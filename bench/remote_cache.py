"""A second machine with warm shared caches against a cold build.

Starts a conan-server and a redis-server on loopback, copies the project's recipes and
sources into two fresh workspaces, then:

1. cold: workspace A builds the bundled recipes' cpu and cuda backends with ccache whose
   remote storage is the redis-server, and publishes them to the Conan remote;
2. warm: workspace B (empty state folder, empty local Conan cache and ccache) builds the
   same selection with ``--remote``: what is published is downloaded, not built.

Prints both wall times, the ratio (target: warm ≤ 15 % of cold), the share of variants
downloaded and the compiler cache's hit rate.  Servers are stopped afterwards.

    python bench/remote_cache.py [--recipes gllm-kernels llaisys …] [--backend cpu …]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from devkit.servers import conan_server, redis_server  # noqa: E402


def builder(ws: Path, *args: str, env: dict[str, str]) -> tuple[float, str]:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "builder", *args], cwd=ws, env=env,
                          capture_output=True, text=True, check=False)
    seconds = time.monotonic() - t0
    if proc.returncode != 0:
        sys.exit(f"builder {' '.join(args)} failed in {ws} ({proc.returncode}):\n"
                 f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return seconds, proc.stdout


def workspace(root: Path, name: str) -> Path:
    ws = root / name
    for part in ("recipes", "sources"):
        shutil.copytree(REPO / part, ws / part, ignore=shutil.ignore_patterns(
            ".builder", "__pycache__", "build", "*.egg-info"))
    return ws


def variants(ws: Path) -> dict[str, int]:
    record = json.loads((ws / ".builder" / "last-build.json").read_text(encoding="utf-8"))
    out: dict[str, int] = {}
    for step in record.get("steps", []):
        if step.get("status") == "done":
            out[step.get("kind", "")] = out.get(step.get("kind", ""), 0) + 1
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recipes", nargs="*", default=[], help="default: every recipe")
    ap.add_argument("--backend", action="append", default=[], help="default: cpu and cuda")
    ap.add_argument("--keep", action="store_true", help="keep the temporary workspaces")
    a = ap.parse_args()
    for tool in ("conan", "cmake", "ninja", "ccache", "redis-server"):
        if shutil.which(tool) is None:
            print(f"needs {tool} on PATH")
            return 2
    selection = [*(a.recipes or ["--all"]), "--skip-unsupported",
                 *(f"--backend={b}" for b in (a.backend or ["cpu", "cuda"]))]
    root = Path(tempfile.mkdtemp(prefix="builder-remote-bench-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BUILDER_", "CCACHE_"))}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    try:
        with conan_server(root / "server", {"bench": "bench-pw"}) as url, \
                redis_server(root / "redis") as redis:
            cache = ["--compiler-cache", "ccache", "--cache-remote", redis]
            env.update(CONAN_LOGIN_USERNAME_TEAM="bench", CONAN_PASSWORD_TEAM="bench-pw")
            a_ws, b_ws = workspace(root, "a"), workspace(root, "b")
            for ws in (a_ws, b_ws):
                builder(ws, "remote", "add", "team", url, env=env)
                builder(ws, "host", env=env)  # probing is not part of either build
            print(f"cold build in {a_ws} …", flush=True)
            cold, _ = builder(a_ws, "build", *selection, *cache, "-q", env=env)
            pub, out = builder(a_ws, "publish", *selection, "--remote", "team", env=env)
            published = int(re.search(r"published (\d+) variant", out).group(1))  # type: ignore[union-attr]
            print(f"warm build in {b_ws} …", flush=True)
            warm, out = builder(b_ws, "build", *selection, *cache, "--remote", "team", "-q",
                                env=env)
            steps = variants(b_ws)
            m = re.search(r"compiler cache: (\d+) hit\(s\), (\d+) miss", out)
            hits, misses = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    finally:
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)
    downloads = steps.get("download", 0)
    print()
    print("| build | wall time |")
    print("| --- | --- |")
    print(f"| cold (workspace A, empty caches) | {cold:.1f} s |")
    print(f"| publish to the Conan remote | {pub:.1f} s |")
    print(f"| warm (workspace B, warm remotes) | {warm:.1f} s |")
    print()
    ratio = warm / cold if cold else 0.0
    print(f"warm/cold: {ratio:.3f} ({'meets' if ratio <= 0.15 else 'misses'} the ≤ 0.15 "
          f"target)")
    print(f"binary remote: {downloads} of {published} published variant(s) downloaded")
    total = hits + misses
    print(f"compiler cache in B: {hits} hit(s), {misses} miss(es)" +
          (f" ({hits / total:.0%} hit rate)" if total else " (nothing compiled)"))
    return 0 if ratio <= 0.15 else 1


if __name__ == "__main__":
    sys.exit(main())
