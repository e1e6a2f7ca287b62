"""The package's shape holds: phases import only downward (import-linter's contracts in
pyproject.toml), no private name crosses a module boundary, every module says what it
exports, and the core phases stay readable (short functions, files of a readable size)."""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "builder"
#: the phases whose functions a newcomer reads first
CORE = ("recipe", "resolve", "plan", "execute")
MAX_FUNCTION_LINES = 60
MAX_FILE_LINES = 450


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_import_contracts_hold() -> None:
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("lint-imports not installed (pip install import-linter; the test extra has it)")
    out = subprocess.run([exe, "--no-cache"], cwd=REPO, capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def test_a_broken_layer_is_caught(tmp_path: Path) -> None:
    """The contract is live: an upward import (recipe → cli) breaks it."""
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("lint-imports not installed (pip install import-linter; the test extra has it)")
    tree = tmp_path / "repo"
    shutil.copytree(PACKAGE, tree / "builder", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tree / "pyproject.toml")
    (tree / "builder" / "recipe" / "upward.py").write_text("from builder.cli import main\n")
    out = subprocess.run([exe, "--no-cache"], cwd=tree, capture_output=True, text=True,
                         check=False, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})
    assert out.returncode != 0
    assert "builder.recipe is not allowed to import builder.cli" in out.stdout


def test_no_private_name_is_imported_across_modules() -> None:
    bad = []
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("builder"):
                bad += [f"{path.relative_to(REPO)}:{node.lineno} imports {a.name} from "
                        f"{node.module}" for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")]
    assert not bad, "\n".join(bad)


def test_every_module_declares_its_public_names() -> None:
    missing = [str(p.relative_to(REPO)) for p in modules()
               if p.name not in ("__init__.py", "__main__.py")
               and "__all__" not in p.read_text(encoding="utf-8")]
    assert not missing, f"add __all__ to: {', '.join(missing)}"


def test_files_stay_readable() -> None:
    long = [f"{p.relative_to(REPO)}: {n} lines" for p in modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES]
    assert not long, "split these by role: " + "; ".join(long)


def test_core_functions_stay_short() -> None:
    """recipe, resolve, plan and execute read as short named steps."""
    long = []
    for pkg in CORE:
        for p in sorted((PACKAGE / pkg).rglob("*.py")):
            for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    n = (node.end_lineno or node.lineno) - node.lineno + 1
                    if n > MAX_FUNCTION_LINES:
                        long.append(f"{p.relative_to(REPO)}:{node.lineno} {node.name}: {n} lines")
    assert not long, "split these into named steps: " + "; ".join(long)
