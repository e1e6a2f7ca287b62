"""Every bundled recipe and every recipe snippet in the docs validates; the README's
reference table is the one generated from the schema."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from builder.recipe.docs import markdown
from builder.recipe.recipeset import RecipeSet, load_recipe
from tests.conftest import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_bundled_recipes_validate() -> None:
    rs = RecipeSet.load(REPO / "recipes")
    assert {r.name for r in rs.recipes} >= {"gllm-kernels"}


def _snippets() -> list[tuple[str, int, str]]:
    out = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in re.finditer(r"```yaml\n(.*?)```", text, re.S):
            if "package:" in m.group(1):
                out.append((doc.name, text[: m.start()].count("\n") + 1, m.group(1)))
    return out


@pytest.mark.parametrize(("doc", "line", "snippet"), _snippets(),
                         ids=lambda x: str(x) if isinstance(x, (str, int)) and len(str(x)) < 30
                         else "")
def test_doc_snippets_validate(project: Path, doc: str, line: int, snippet: str) -> None:
    path = project / "recipes" / f"snippet_{line}.yaml"
    path.write_text(snippet)
    load_recipe(path)


def test_readme_reference_is_generated() -> None:
    assert markdown() in (REPO / "README.md").read_text(encoding="utf-8"), \
        "regenerate with: builder schema --format markdown"


def _quick_start() -> list[str]:
    import runpy

    ns = runpy.run_path(str(REPO / ".ci" / "readme_commands.py"))
    commands: list[str] = ns["quick_start"]((REPO / "README.md").read_text(encoding="utf-8"))
    return commands


def test_quick_start_is_two_commands_that_name_what_exists() -> None:
    """`.ci/run` runs these exactly; what they name must exist (script, extras, recipes)."""
    import shlex

    tomllib = pytest.importorskip("tomllib")
    first, second = _quick_start()
    words = shlex.split(first)
    script = REPO / words[0]
    assert script.is_file() and script.stat().st_mode & 0o111, words[0]
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    spec = next(w for w in words if w.startswith(".["))
    assert set(spec[2:-1].split(",")) <= set(extras), spec
    assert "builder build --all --skip-unsupported" in first
    assert second == "python3 -m pytest"


def test_debian_script_installs_what_the_example_recipes_ask_for() -> None:
    import subprocess

    from builder.resolve.system import packages_for, table

    listed = subprocess.run([str(REPO / "scripts" / "install-debian-packages"), "--list"],
                            capture_output=True, text=True, check=True).stdout.split()
    # the host's packages for the default options (cross builds' target packages and
    # option-enabled ones, such as dashinfer's multinuma, stay a skip with its fix)
    wanted = {p for r in RecipeSet.load(REPO / "recipes").recipes for c in r.requires.conan
              if c.provider == "system" for p in packages_for(table()[c.name])}
    wanted |= {p for r in RecipeSet.load(REPO / "recipes").recipes
               for s in r.requires.system if not s.when for p in s.packages}
    assert wanted and not wanted - set(listed), wanted - set(listed)
    assert {"cmake", "ninja-build", "g++"} <= set(listed)
