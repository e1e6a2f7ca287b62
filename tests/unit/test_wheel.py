"""Wheels written by builder install with pip and import."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from builder.wheels.build import build_wheel, wheel_tag


def test_tags() -> None:
    assert wheel_tag("cpython", "3.11", "linux", "x86_64", True) == "cp311-cp311-linux_x86_64"
    assert wheel_tag("none", "", "linux", "x86_64", True) == "py3-none-linux_x86_64"
    assert wheel_tag("none", "", "linux", "x86_64", False) == "py3-none-any"


def test_wheel_installs_and_imports(tmp_path: Path) -> None:
    (tmp_path / ".builder-state").write_text("")  # a folder builder owns (the writer)
    src = tmp_path / "python"
    (src / "demo_pkg").mkdir(parents=True)
    (src / "demo_pkg" / "__init__.py").write_text("VALUE = 42\n")
    (src / "demo_pkg" / "libdemo.so").write_bytes(b"\x7fELF not really")
    whl = build_wheel(src, tmp_path / "dist", "demo-pkg", "1.2.0", "py3-none-linux_x86_64",
                      summary="a demo")
    assert whl.name == "demo_pkg-1.2.0-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(whl) as z:
        names = set(z.namelist())
        assert {"demo_pkg/__init__.py", "demo_pkg/libdemo.so",
                "demo_pkg-1.2.0.dist-info/WHEEL", "demo_pkg-1.2.0.dist-info/RECORD"} <= names
        assert "Tag: py3-none-linux_x86_64" in z.read("demo_pkg-1.2.0.dist-info/WHEEL").decode()
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--target", str(target), str(whl)], check=True)
    out = subprocess.run([sys.executable, "-c", "import demo_pkg; print(demo_pkg.VALUE)"],
                         env={"PYTHONPATH": str(target)}, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "42"
    assert (target / "demo_pkg" / "libdemo.so").exists()
