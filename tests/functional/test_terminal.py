"""`builder build` on a terminal: the live display (rich), which CI without a terminal never
drew. Once it crashed on the first frame (rich was not a declared dependency); it runs here on
a pseudo-terminal through `script`, as a user's shell would."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.functional.conftest import need

pytestmark = pytest.mark.functional

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


def test_build_on_a_terminal_draws_the_live_display(project: Path) -> None:
    need("conan", "cmake", "ninja", "g++")
    if shutil.which("script") is None:
        pytest.skip("needs script (util-linux)")
    cmd = shlex.join([sys.executable, "-m", "builder", "build", "app"])
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS", "NO_COLOR")}
    env["COLUMNS"] = "60"  # narrow: names fold instead of being cut
    proc = subprocess.run(["script", "-qec", cmd, "/dev/null"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    out = ANSI.sub("", proc.stdout)
    assert proc.returncode == 0, out[-3000:]
    assert "Traceback" not in out
    assert re.search(r"\d+/15 steps", out), out[-3000:]  # the live header was drawn
    assert "now: greet cpu-release " in out  # step labels without the key hash
    assert "done: 15 step(s) run" in out and "outputs:" in out
