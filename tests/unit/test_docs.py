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
