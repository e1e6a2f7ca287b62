"""The documentation is checked, not trusted: every bundled recipe and every recipe example in
the README and docs/ validates, every `builder …` command line they show parses, every relative
link resolves to a file and heading that exist, and docs/recipes.md's reference table is the one
generated from the schema."""

from __future__ import annotations

import re
import shlex
import unicodedata
from pathlib import Path

import pytest
import yaml

from builder.recipe.docs import markdown
from builder.recipe.recipeset import RecipeSet, load_recipe
from tests.conftest import REPO

#: what users read: the manual, the explanations, and the records it links to
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
        REPO / "bench" / "RESULTS.md", REPO / "CHANGELOG.md"]
#: documents other work is writing now; a link to one is allowed while it does not exist
#: (once it does, its links and headings are checked like any other's)
#: what a recipe fragment is completed with, key by key, before the schema checks it
BASE = {"package": {"name": "snippet", "version": "1.0.0"},
        "source": {"path": "../sources/greet"}, "backends": {"cpu": {}}}
FENCE = re.compile(r"^```[^\n]*\n.*?^```[ \t]*$", re.S | re.M)


def _rel(doc: Path) -> str:
    return str(doc.relative_to(REPO)) if doc.is_relative_to(REPO) else str(doc)


def _blocks(lang: str | None = None) -> list[tuple[str, int, str]]:
    """(document, line, text) of every fenced block (of ``lang``, when given)."""
    out = []
    for doc in DOCS:
        if not doc.is_file():
            continue
        text = doc.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            first, _, body = m.group(0).partition("\n")
            if lang is None or first.strip() == f"```{lang}":
                out.append((_rel(doc), text[: m.start()].count("\n") + 1,
                            body.rsplit("```", 1)[0]))
    return out


def _id(x: object) -> str:
    return str(x) if isinstance(x, (str, int)) and len(str(x)) < 30 else ""


def test_the_documents_exist() -> None:
    assert (REPO / "docs" / "recipes.md").is_file() and len(_blocks("yaml")) >= 4


def test_bundled_recipes_validate() -> None:
    rs = RecipeSet.load(REPO / "recipes")
    assert {r.name for r in rs.recipes} >= {"gllm-kernels"}


@pytest.mark.parametrize(("doc", "line", "snippet"), _blocks("yaml"), ids=_id)
def test_doc_recipe_examples_validate(project: Path, doc: str, line: int,
                                      snippet: str) -> None:
    """A whole recipe is loaded as builder loads one (schema and semantic checks); a
    fragment (`backends:` …) is completed with a minimal recipe and checked against the
    schema, so a renamed or mistyped key in an example fails here."""
    from jsonschema import Draft202012Validator

    from builder.recipe.validate import schema

    data = yaml.safe_load(snippet)
    assert isinstance(data, dict), f"{doc}:{line}: a yaml example that is not a mapping"
    if "package" in data:
        path = project / "recipes" / f"snippet_{line}.yaml"
        path.write_text(snippet)
        load_recipe(path)
        return
    errors = [f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
              for e in Draft202012Validator(schema()).iter_errors({**BASE, **data})]
    assert not errors, f"{doc}:{line}: " + "; ".join(errors)


def test_fragments_are_checked_not_waved_through() -> None:
    from jsonschema import Draft202012Validator

    from builder.recipe.validate import schema

    bad = {**BASE, "backends": {"cuda": {"arch": ["sm_90"]}}}  # archs, misspelt
    assert list(Draft202012Validator(schema()).iter_errors(bad))


def test_recipe_reference_is_generated() -> None:
    assert markdown() in (REPO / "docs" / "recipes.md").read_text(encoding="utf-8"), \
        "regenerate with: python -m builder.recipe.docs docs/recipes.md"


# -- command lines ---------------------------------------------------------------------------

def _builder_commands() -> list[tuple[str, int, str]]:
    """Every `builder …` command of a code block: comments, redirections and `[ ]` around
    optional parts dropped, `&&`, `|` and `;` splitting one line into several."""
    out = []
    for doc, start, body in _blocks():
        for i, line in enumerate(body.splitlines(), start + 1):
            try:
                words = shlex.split(line.lstrip("$ "), comments=True)
            except ValueError:
                continue
            command: list[str] = []
            for w in [*words, ";"]:
                end = w in ("&&", "||", "|", ";") or w.endswith(";")
                if w.endswith(";") and w != ";":
                    command.append(w[:-1])
                elif not end:
                    command.append(w)
                if end:
                    if command[:1] == ["builder"]:
                        out.append((doc, i, shlex.join(command)))
                    command = []
    return out


def _argv(command: str) -> list[str]:
    words = shlex.split(command)[1:]
    argv: list[str] = []
    skip = False
    for w in words:
        if skip:
            skip = False
        elif w.startswith(">"):
            skip = w == ">"
        else:
            argv.append(w.strip("[]"))
    return [w for w in argv if w]


@pytest.mark.parametrize(("doc", "line", "command"), _builder_commands(), ids=_id)
def test_doc_commands_parse(doc: str, line: int, command: str,
                            capsys: pytest.CaptureFixture[str]) -> None:
    """A documented command whose subcommand or option does not exist (or takes no such
    value) fails here, with argparse's own message."""
    from builder.cli.args import parser

    try:
        parser().parse_args(_argv(command))
    except SystemExit as exc:
        pytest.fail(f"{doc}:{line}: {command!r} does not parse (exit {exc.code}): "
                    f"{capsys.readouterr().err.strip()}")


def test_commands_are_found_and_a_wrong_one_fails() -> None:
    from builder.cli.args import parser

    found = {c.split()[1] for _, _, c in _builder_commands() if len(c.split()) > 1}
    assert {"validate", "plan", "build", "publish", "cache", "report"} <= found
    with pytest.raises(SystemExit):
        parser().parse_args(_argv("builder plan --all --no-such-option"))


# -- links ----------------------------------------------------------------------------------

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces → '-'."""
    text = heading.strip().lower()
    text = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    text = FENCE.sub("", doc.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out: set[str] = set()
    for m in re.finditer(r"^#{1,6}[ \t]+(.+?)[ \t]*#*$", text, re.M):
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(doc: Path) -> list[str]:
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), doc.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)
    bad = []
    for m in LINK.finditer(text):
        target = m.group(1)
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: …
            continue
        where, _, anchor = target.partition("#")
        dest = (doc.parent / where).resolve() if where else doc
        line = text[: m.start()].count("\n") + 1
        if not dest.exists():
            bad.append(f"{_rel(doc)}:{line}: {target}: no such file")
        elif anchor and (dest.is_dir() or anchor not in anchors(dest)):
            bad.append(f"{_rel(doc)}:{line}: {target}: no heading #{anchor} in "
                       f"{_rel(dest)}")
    return bad


@pytest.mark.parametrize("doc", [d for d in DOCS if d.is_file()], ids=_rel)
def test_relative_links_resolve(doc: Path) -> None:
    bad = broken_links(doc)
    assert not bad, "\n".join(bad)


def test_the_link_checker_finds_a_broken_file_and_anchor(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Où: `x` (y)\n\n## Où: `x` (y)\n")
    doc = tmp_path / "b.md"
    doc.write_text("[ok](a.md#où-x-y) [ok](a.md#où-x-y-1) [f](nope.md) [h](a.md#nope)\n"
                   "`[code](nope.md)` [web](https://example.com/x)\n")
    assert anchors(tmp_path / "a.md") == {"où-x-y", "où-x-y-1"}
    found = broken_links(doc)
    assert len(found) == 2 and "nope.md: no such file" in found[0] and "#nope" in found[1]


# -- the quick start -------------------------------------------------------------------------

def _quick_start() -> list[str]:
    import runpy

    ns = runpy.run_path(str(REPO / ".ci" / "readme_commands.py"))
    commands: list[str] = ns["quick_start"]((REPO / "README.md").read_text(encoding="utf-8"))
    return commands


def test_quick_start_is_two_commands_that_name_what_exists() -> None:
    """`.ci/run` runs these exactly; what they name must exist (script, extras, recipes)."""
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


def test_quick_start_says_what_each_debian_package_is_for() -> None:
    """The first command installs system packages; the README names every one of them."""
    import subprocess

    listed = subprocess.run([str(REPO / "scripts" / "install-debian-packages"), "--list"],
                            capture_output=True, text=True, check=True).stdout.split()
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    start = readme.index("## Quick start")
    section = FENCE.sub("", readme[start:readme.index("\n## ", start + 1)])
    named = {w for span in re.findall(r"`([^`\n]+)`", section) for w in re.split(r"[/ ,]+", span)}
    assert not set(listed) - named, set(listed) - named


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


# -- the manual stays a manual ---------------------------------------------------------------

#: the marks of a lab notebook: which working session, which machine loan measured what
NOTEBOOK = re.compile(r"[Ss]ession[ -][0-9]+|\bstop [0-9]+\b|\blease [A-Z]\b|\bhost [A-Z]\b")


def test_the_readme_is_a_short_manual_and_docs_carry_no_lab_notes() -> None:
    """Dated runs, loans and sessions belong in bench/RESULTS.md and CHANGELOG.md."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 400
    notes = [f"{_rel(d)}:{text[: m.start()].count(chr(10)) + 1}: {m.group(0)}"
             for d in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
             for text in [d.read_text(encoding="utf-8")] for m in NOTEBOOK.finditer(text)]
    assert not notes, "move these to bench/RESULTS.md:\n" + "\n".join(notes)
