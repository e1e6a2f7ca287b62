"""Property-based: whatever a recipe file contains, loading and planning it either
succeed or raise builder's own errors (a RecipeError with located diagnostics, a
UsageError, a PlanError) — never another exception, and never slowly."""

from __future__ import annotations

import copy
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder.errors import BuilderError, PlanError, RecipeError, UsageError
from builder.recipe.recipeset import RecipeSet, load_recipe
from builder.recipe.yamlload import MAX_NODES, load_text
from builder.resolve.request import OptionOverride, Request
from builder.resolve.resolver import resolve
from builder.workspace.paths import Workspace
from builder.workspace.state import read_state
from tests.conftest import FIXTURES, REPO, host

#: the fixture recipes, and the project's own (which use nearly every schema feature)
FIXTURE_NAMES = ("greet", "app", "kern", "vecadd", "torchy")
EXAMPLES = sorted(p.stem for p in (REPO / "recipes").glob("*.yaml"))
NAMES = (*FIXTURE_NAMES, *EXAMPLES)
BASES = {n: yaml.safe_load((FIXTURES / "project" / "recipes" / f"{n}.yaml").read_text())
         for n in FIXTURE_NAMES} | {
         n: yaml.safe_load((REPO / "recipes" / f"{n}.yaml").read_text()) for n in EXAMPLES}
#: FUZZ_N=5000 runs a longer, randomised search (the default is fixed and quick)
FUZZ_N = int(os.environ.get("FUZZ_N", "0"))
SETTINGS = settings(max_examples=FUZZ_N or 300, deadline=None, derandomize=not FUZZ_N,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture project plus the example recipes (with empty source folders, so
    that hashing them stays cheap)."""
    dst = tmp_path_factory.mktemp("fuzz") / "project"
    shutil.copytree(FIXTURES / "project", dst, ignore=shutil.ignore_patterns(".builder"))
    for name in EXAMPLES:
        shutil.copy(REPO / "recipes" / f"{name}.yaml", dst / "recipes")
        (dst / "sources" / name).mkdir()
    return dst


# -- values ---------------------------------------------------------------------------

texts = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["", " ", "${", "${nope}", "${options.loud}", "$${x}", "../../etc",
                     "/etc/passwd", "sm_80", "gfx1100", "cpu", "cuda", ">=1.0", "1.2.3",
                     "not a version", "x" * 300, "a b;rm -rf /", "é\u202eü\U0001f600",
                     "\x00", "~", "null", "yes", "0x10", "1e400", "-.inf"]))
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                    st.just(10**40), st.just(-(10**40)), texts)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(texts, inner, max_size=4)), max_leaves=12)


def paths_of(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(data, dict):
        for k, v in data.items():
            out += paths_of(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += paths_of(v, (*prefix, i))
    return out


def get(data: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        data = data[p]
    return data


TRICKY = ["", " ", "${", "}", "$${x}", "${nope}", "${options.loud}", "${options.root}",
          "${python}", "${kernel}", "${device}", "${env.HOME}", "${backend}/../../etc",
          "../../etc", "/etc/passwd", "~", "sm_80", "sm_70", "sm_90a", "gfx1100", "apple-m1",
          "cpu", "cuda", ">=1.0", "==99", "1.2.3", "3.11", "3.99", "not a version",
          "x" * 300, "a b;rm -rf /", "$(reboot)", "`id`", "é\u202eü\U0001f600", "\x00",
          "null", "yes", "0x10", "1e400", "-.inf", "-o", "--help", "*.cpp", "**", "8GiB",
          "-1GiB", "torch>=2.0", "protobuf/3.21.12", "not/a/ref/x", "release", "kernels"]


def like(draw: st.DrawFn, rng: Any, old: Any) -> Any:
    """A value of the same type as ``old`` (so that the schema often still accepts it
    and the semantic checks, the resolver and the planner get to see it)."""
    if isinstance(old, bool):
        return not old
    if isinstance(old, int):
        return rng.choice([0, -1, 1, 7, 10**40, 2**63, old * 1000])
    if isinstance(old, str):
        if rng.random() < 0.2:
            return draw(st.text(max_size=12))
        return rng.choice([*TRICKY, old + "x", old.upper(), old * 50, f"${{{old}}}",
                           f"{old}/../..", f" {old}", old[: len(old) // 2]])
    if isinstance(old, list):
        out = list(old)
        if out and rng.random() < 0.5:
            i = rng.randrange(len(out))
            out[i] = like(draw, rng, out[i])
        else:
            out.append(like(draw, rng, rng.choice(out)) if out else rng.choice(TRICKY))
        rng.shuffle(out)
        return out
    if isinstance(old, dict) and old:
        out = dict(old)
        k = rng.choice(list(out))
        out[k] = like(draw, rng, out[k])
        return out
    return draw(values)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, Any]:
    """A recipe with a few mutations: mostly same-type values, sometimes wrong types,
    deleted, added, wrapped or renamed keys."""
    rng = draw(st.randoms(use_true_random=False))  # uniform choices of where and what
    name = rng.choice(NAMES)
    data: Any = copy.deepcopy(BASES[name])
    for _ in range(rng.randint(1, 3)):
        paths = paths_of(data)[1:]
        if rng.random() < 0.8:  # a recipe with a broken name stops at the schema
            paths = [q for q in paths if q[0] != "package"]
        if not paths:
            break
        path = rng.choice(paths)
        action = rng.choice(["like"] * 8 + ["replace", "delete", "add", "wrap", "rename"])
        parent, last = get(data, path[:-1]), path[-1]
        if action == "like":
            parent[last] = like(draw, rng, parent[last])
        elif action == "replace":
            parent[last] = draw(values)
        elif action == "delete":
            del parent[last]
        elif action == "wrap":
            parent[last] = [parent[last]]
        elif action == "add" and isinstance(parent, dict):
            parent[rng.choice(TRICKY)] = draw(values)
        elif action == "add" and isinstance(parent, list):
            parent.insert(last, draw(values))
        elif action == "rename" and isinstance(parent, dict):
            parent[rng.choice(TRICKY)] = parent.pop(last)
    return name, data


def dump(data: Any) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=10**6)


@st.composite
def recipe_bytes(draw: st.DrawFn) -> tuple[str, bytes]:
    """YAML text of a mutated recipe, then mutated as text: tabs, duplicated lines
    (duplicate keys), anchors and aliases, truncation, random characters and bytes."""
    name, data = draw(mutated())
    text = dump(data)
    lines = text.splitlines(keepends=True) or ["\n"]
    for _ in range(draw(st.integers(0, 2))):
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        op = draw(st.sampled_from(["tab", "dup", "alias", "truncate", "insert", "anchor-map"]))
        if op == "tab":
            lines[i] = "\t" + lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "alias" and ": " in lines[i]:
            j = draw(st.integers(0, len(lines) - 1))
            key, _, val = lines[i].partition(": ")
            if val.strip():
                lines[i] = f"{key}: &anc {val}"
                if j != i and ": " in lines[j]:
                    k2, _, _ = lines[j].partition(": ")
                    lines[j] = f"{k2}: *anc\n"
        elif op == "anchor-map" and lines[i].rstrip().endswith(":"):
            lines[i] = lines[i].rstrip("\n") + " &m\n"
            lines.append(f"extra_{i}: *m\n")
        elif op == "truncate":
            lines = [*lines[:i], lines[i][: draw(st.integers(0, len(lines[i])))]]
        elif op == "insert":
            lines.insert(i, draw(st.text(max_size=15)) + "\n")
    raw = "".join(lines).encode("utf-8", errors="surrogatepass")
    if draw(st.booleans()) and draw(st.booleans()):
        pos = draw(st.integers(0, len(raw)))
        raw = raw[:pos] + draw(st.binary(min_size=1, max_size=8)) + raw[pos:]
    return name, raw


#: problems of the whole document, which have no line to point at
WHOLE_FILE = ("a recipe must be a mapping", "YAML error:")


def check_error(exc: BuilderError, file: Path | None = None) -> None:
    """builder's own error; a recipe error names the file and (unless the problem is the
    whole document) the line and column of every problem."""
    assert isinstance(exc, RecipeError | UsageError | PlanError), type(exc)
    assert exc.render()  # renders without raising
    if isinstance(exc, RecipeError):
        assert exc.diagnostics
        for d in exc.diagnostics:
            assert d.message, d
            assert d.location.file.endswith(".yaml"), d
            if file is not None:
                assert Path(d.location.file).name == file.name, d
                assert d.location.line > 0 or d.message.startswith(WHOLE_FILE), d


def load_and_plan(project: Path, name: str, raw: bytes) -> None:
    path = project / "recipes" / f"{name}.yaml"
    original = path.read_bytes()
    path.write_bytes(raw)
    try:
        try:
            load_recipe(path)
        except BuilderError as exc:
            check_error(exc, path)
            return
        ws = Workspace.at(project)
        try:
            rs = RecipeSet.load(ws.recipes_dir)
            roots = rs.select(sorted({"app", name}), ws.recipes_dir)
            for facts in ("linux-cuda13", "h100"):
                resolve(roots, rs, Request(env=(("HOME", "/home/user"),)), host(facts),
                        read_state(ws, rs.closure(roots)), ws)
        except BuilderError as exc:
            check_error(exc)  # may name another recipe of the set
    finally:
        path.write_bytes(original)


@SETTINGS
@given(recipe_bytes())
def test_mutated_recipes_never_crash(project: Path, case: tuple[str, bytes]) -> None:
    name, raw = case
    load_and_plan(project, name, raw)


@SETTINGS
@given(mutated())
def test_wrong_types_and_missing_keys_never_crash(project: Path, case: tuple[str, Any]
                                                  ) -> None:
    name, data = case
    load_and_plan(project, name, dump(data).encode())


@settings(max_examples=25, deadline=None, derandomize=True)
@given(depth=st.integers(2, 12), fanout=st.integers(2, 12))
def test_alias_bombs_are_refused_quickly(depth: int, fanout: int) -> None:
    lines = ["l0: &l0 [" + ", ".join(["lol"] * fanout) + "]"]
    for i in range(1, depth):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * fanout) + "]")
    text = "\n".join(lines) + "\n"
    size = sum(fanout ** k for k in range(1, depth + 1)) * 2  # rough node count
    start = time.monotonic()
    try:
        load_text(text, "bomb.yaml")
        assert size < 4 * MAX_NODES, f"a document of ~{size} nodes was accepted"
    except RecipeError as exc:
        assert "alias bomb" in exc.render()
        assert size > MAX_NODES // 4
    assert time.monotonic() - start < 10.0  # expanded it would take hours


@settings(SETTINGS, max_examples=FUZZ_N or 100)
@given(st.data())
def test_option_values_from_the_command_line_never_crash(project: Path,
                                                         data: st.DataObject) -> None:
    """`-o name=value` with any text, for every option of the example recipes."""
    ws = Workspace.at(project)
    rs = RecipeSet.load(ws.recipes_dir)
    recipe = data.draw(st.sampled_from([r for r in rs.recipes if r.options]))
    chosen = data.draw(st.lists(st.sampled_from(recipe.options), min_size=1, max_size=3))
    values = st.one_of(texts, st.sampled_from(["true", "0", "-1", "1" * 50, "a;b", "80;86",
                                               "'80;90a'", "sm_80", "12.4", ">=1"]))
    overrides = tuple(OptionOverride(data.draw(st.sampled_from(["", recipe.name])), o.name,
                                     data.draw(values)) for o in chosen)
    roots = rs.select([recipe.name], ws.recipes_dir)
    try:
        resolve(roots, rs, Request(env=(("HOME", "/home/user"),), options=overrides),
                host(data.draw(st.sampled_from(["linux-cuda13", "h100"]))),
                read_state(ws, rs.closure(roots)), ws)
    except BuilderError as exc:
        check_error(exc)
