"""`builder build` killed with SIGKILL at random points: the next build succeeds and
every published manifest verifies against the files on disk.

One state folder serves every run, so each build has to cope with whatever the previous
kill left behind (half-written build folders, stage trees, Conan cache entries, temporary
files, and compilers still running as orphans).  Before each killed build the greeting in
greet's source changes, so that both recipes (app links greet statically) have work to do;
after the verifying build the installed program must print the new greeting.
"""

from __future__ import annotations

import json
import random
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from builder.workspace import usage as cachescan
from builder.workspace.paths import Workspace
from tests.reliability.conftest import (
    builder_argv,
    child_env,
    processes_mentioning,
    run_build,
    start_build,
    verify_installs,
    wait_no_processes,
)

pytestmark = [pytest.mark.functional, pytest.mark.slow]

RUNS = 20


def set_greeting(project: Path, word: str) -> None:
    src = project / "sources" / "greet" / "src" / "greet.cpp"
    text = src.read_text(encoding="utf-8")
    src.write_text(re.sub(r'return "[a-z0-9]+, " \+ who;', f'return "{word}, " + who;', text),
                   encoding="utf-8")


def installed_app(state: Path) -> Path:
    """The app install whose manifest is newest (the one the last build published)."""
    manifests = sorted((state / "install" / "app").glob("*/manifest.json"),
                       key=lambda p: json.loads(p.read_text())["published"] + p.parent.name)
    newest = max(manifests, key=lambda p: p.stat().st_mtime_ns)
    return newest.parent / "bin" / "app"


def test_sigkill_at_random_points(project: Path, tmp_path: Path, real_tools: None) -> None:
    state = tmp_path / "state"
    t0 = time.monotonic()
    first = run_build(project, state, "app")
    full = time.monotonic() - t0
    assert first.returncode == 0, first.stdout + first.stderr
    verify_installs(state)
    kills = 0
    for seed in range(RUNS):
        rng = random.Random(seed)
        word = f"hi{seed}"
        set_greeting(project, word)
        delay = rng.uniform(0.2, max(full, 1.0))
        proc = start_build(project, state, "app")
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.communicate(timeout=30)
        after = run_build(project, state, "app")
        assert after.returncode == 0, (f"seed {seed} (killed after {delay:.2f}s):\n"
                                       f"{after.stdout}\n{after.stderr}")
        assert verify_installs(state) >= 2
        out = subprocess.run([installed_app(state), "you"], capture_output=True, text=True,
                             check=True).stdout
        assert out == f"{word}, you\n", f"seed {seed}: the install is not the current source"
        # nothing of the killed build keeps running once the next build is done
        assert wait_no_processes(str(project), timeout=5) == [], processes_mentioning(
            str(project))
    assert kills >= RUNS // 2, f"only {kills} of {RUNS} builds were still running when killed"
    # whatever the kills left behind, `cache prune` clears it without touching what the
    # last build needs: the next build has nothing to do
    pruned = subprocess.run(builder_argv(project, state, "cache", "prune"), env=child_env(),
                            capture_output=True, text=True, check=False)
    assert pruned.returncode == 0, pruned.stderr
    assert not [e for e in cachescan.scan(Workspace.at(project, state)) if e.kind == "temporary"]
    final = run_build(project, state, "app")
    assert final.returncode == 0 and "nothing to do" in final.stdout, final.stdout
    assert verify_installs(state) == 2
