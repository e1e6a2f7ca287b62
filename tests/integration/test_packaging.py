"""Packaging: the wheel a user installs holds every module and data file of builder, and
everything builder imports at run time is a declared dependency.

A hand-written package list once left ``builder.memory`` out of the wheel, so every command
of a non-editable install failed; `.ci/run` also installs the wheel into a fresh venv and
builds with it (this test is the fast check)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.conftest import REPO

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
STDLIB = set(sys.stdlib_module_names)


def _third_party_imports() -> dict[str, str]:
    """Top-level names of the non-stdlib modules builder/ imports → a file importing it."""
    found: dict[str, str] = {}
    for py in sorted((REPO / "builder").rglob("*.py")):
        for node in ast.walk(ast.parse(py.read_text(), str(py))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for n in names:
                top = n.split(".")[0]
                if top not in STDLIB and top not in {"builder", "__future__"}:
                    found.setdefault(top, str(py.relative_to(REPO)))
    return found


def test_every_runtime_import_is_a_declared_dependency() -> None:
    declared = {Requirement(r).name.lower() for r in PYPROJECT["project"]["dependencies"]}
    dists = metadata.packages_distributions()
    undeclared = []
    for top, where in _third_party_imports().items():
        owners = {d.lower() for d in dists.get(top, [top])}
        if not owners & declared:
            undeclared.append(f"{top} (imported by {where}; distribution "
                              f"{', '.join(sorted(owners))})")
    assert not undeclared, "add to [project].dependencies: " + "; ".join(undeclared)
    assert "rich" in _third_party_imports()  # the check above did look at progress.py


def test_distribution_name_is_not_builder() -> None:
    # `builder` on PyPI is an unrelated project; the import package and command keep the name
    assert PYPROJECT["project"]["name"] != "builder"
    assert PYPROJECT["project"]["scripts"]["builder"] == "builder.cli.entry:run"


@pytest.mark.slow
def test_wheel_holds_every_module_and_data_file(tmp_path: Path) -> None:
    src = tmp_path / "src"  # a copy: setuptools writes build/ and *.egg-info next to the source
    shutil.copytree(REPO / "builder", src / "builder",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for f in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / f, src / f)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                           str(tmp_path), str(src)], capture_output=True, text=True,
                          check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    wheel = next(tmp_path.glob("*.whl"))
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    pkg = REPO / "builder"
    wanted = {str(p.relative_to(REPO)) for p in pkg.rglob("*.py") if "__pycache__" not in
              p.parts}
    wanted |= {str(p.relative_to(REPO)) for pattern in ("data/*.json", "templates/*.tmpl")
               for p in pkg.rglob(pattern)}
    missing = sorted(wanted - names)
    assert not missing, f"{wheel.name} lacks {missing}"
    assert "builder/memory/broker.py" in names and "builder/resources/recipe.schema.json" in names
