"""The report, rendered by a real headless Chromium: the charts are drawn."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.functional.conftest import need

pytestmark = pytest.mark.functional

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking"]


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return name
    pytest.skip("needs chromium (apt-get install chromium; CI installs it)")
    return ""


def test_report_renders_in_chromium(project: Path, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    need("conan", "cmake", "ninja", "g++")
    browser = _chromium()
    r = cli("build", "app", cwd=project)
    assert r.code == 0, r.out + r.err
    page = tmp_path / "report.html"
    assert cli("report", "--output", str(page), cwd=project).code == 0
    dom = subprocess.run([browser, *FLAGS, "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, timeout=120, check=False).stdout
    # what the browser parsed: one bar per compile job (greet.cpp, main.cpp), one per step run
    assert len(re.findall(r'<rect class="job', dom)) == 2
    assert len(re.findall(r'<rect class="step', dom)) == 15
    assert '<polyline class="mem"' in dom and '<line class="budget"' in dom
    shot = tmp_path / "report.png"
    subprocess.run([browser, *FLAGS, "--window-size=1200,900", f"--screenshot={shot}",
                    page.as_uri()], capture_output=True, timeout=120, check=False)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    # a blank white page compresses to a few KB; charts and text do not
    assert len(data) > 20_000
