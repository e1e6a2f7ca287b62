"""bench/ and tests/ stay leaves: neither imports the other, and what both need lives in
devkit/ (which imports neither) or in builder/ (which imports none of the three, since its
wheel ships without them)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

#: folder → top-level packages its modules may not import
FORBIDDEN = {
    "bench": {"tests"},
    "tests": {"bench"},
    "devkit": {"tests", "bench"},
    "builder": {"tests", "bench", "devkit"},
}


def imported_roots(path: Path) -> set[str]:
    """The top-level names of every absolute import in ``path``, wherever it sits."""
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            roots.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_no_module_imports_across_the_boundary(folder: str) -> None:
    bad = [f"{p.relative_to(REPO)} imports {', '.join(sorted(hit))}"
           for p in sorted((REPO / folder).rglob("*.py"))
           if "fixtures" not in p.parts
           for hit in [imported_roots(p) & FORBIDDEN[folder]] if hit]
    assert not bad, "\n".join(bad)


def test_the_scan_sees_imports_inside_functions(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from bench.capbench import x\n    import tests.conftest\n"
                 "from . import sibling\n")
    assert imported_roots(f) == {"bench", "tests"}
