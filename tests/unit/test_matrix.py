"""builder.ci.sessions and builder.ci.jobs: nox sessions, the factored CI matrix, posargs checks,
the workflow."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from builder.ci import jobs as cimatrix
from builder.ci import sessions as matrix
from builder.errors import MatrixError
from builder.memory.history import History
from builder.recipe.model import PythonSpec, Recipe
from builder.recipe.recipeset import RecipeSet
from tests.conftest import FIXTURES, REPO, CliResult, host

ALL = ("3.9", "3.10", "3.11", "3.12", "3.13")


@pytest.fixture(scope="module")
def repo_recipes() -> list[Recipe]:
    """The bundled recipes this file was written against (others may be added)."""
    return [r for r in RecipeSet.load(REPO / "recipes").recipes
            if r.name in ("gllm-kernels", "libamm", "llaisys")]


@pytest.fixture(scope="module")
def fixture_recipes() -> list[Recipe]:
    """The fixture project's recipes this file was written against (others may be added)."""
    return [r for r in RecipeSet.load(FIXTURES / "project" / "recipes").recipes
            if r.name in ("app", "greet", "kern", "vecadd")]


def by_name(recipes: list[Recipe]) -> dict[str, Recipe]:
    return {r.name: r for r in recipes}


# ---------------------------------------------------------------------------- sessions


def test_sessions_of_the_repo_recipes(repo_recipes: list[Recipe]) -> None:
    got = {s.name: s for s in matrix.sessions(repo_recipes, "3.11")}
    want = [f"build-{b}-{py}" for b in ("cpu", "cuda", "rocm", "metal") for py in ALL]
    assert list(got) == want  # backend order of the registry, versions numerically
    assert got["build-cpu-3.11"].recipes == ("libamm", "llaisys")
    assert got["build-cpu-3.11"].independent == ("llaisys",)
    assert got["build-cuda-3.11"].recipes == ("gllm-kernels", "llaisys")
    assert got["build-metal-3.12"].recipes == ("gllm-kernels",)
    assert got["build-cpu-3.9"].description == \
        "Build libamm (cpython), llaisys for cpu with Python 3.9"


def test_recipes_without_python_versions_use_the_default(fixture_recipes: list[Recipe]
                                                          ) -> None:
    got = matrix.sessions(fixture_recipes, "3.12")
    assert [(s.name, s.recipes) for s in got] == [
        ("build-cpu-3.12", ("app", "greet")), ("build-cuda-3.12", ("kern", "vecadd"))]


def test_session_unavailable_names_backend_and_interpreter(repo_recipes: list[Recipe]
                                                           ) -> None:
    linux, mac = host("linux-cuda13"), host("macos-m2")
    s = {x.name: x for x in matrix.sessions(repo_recipes, "3.11")}
    assert matrix.session_unavailable(s["build-cuda-3.11"], linux) is None
    why = matrix.session_unavailable(s["build-metal-3.11"], linux)
    assert why is not None and why.reason == "metal: needs a macOS host with xcrun"
    assert matrix.session_unavailable(s["build-metal-3.11"], mac) is None
    why = matrix.session_unavailable(s["build-cuda-3.11"], mac)
    assert why is not None and why.reason.startswith("cuda:")
    why = matrix.session_unavailable(s["build-cpu-3.12"], mac)  # mac has 3.11 only
    assert why is not None and "no Python 3.12 interpreter" in why.reason
    assert "pyenv install 3.12" in why.fix


# ---------------------------------------------------------------------------- posargs


def split(recipes: list[Recipe], name: str, *posargs: str) -> matrix.BuildArgs:
    all_s = matrix.sessions(recipes, "3.11")
    spec = next(s for s in all_s if s.name == name)
    return matrix.split_posargs(list(posargs), spec, all_s, recipes, "3.11")


def test_posargs_narrow_and_pass_options_through(repo_recipes: list[Recipe]) -> None:
    a = split(repo_recipes, "build-cuda-3.11")
    assert a.recipes == ("gllm-kernels", "llaisys") and not a.named
    a = split(repo_recipes, "build-cuda-3.11", "gllm-kernels", "-o", "kernels_root=/tmp/x",
              "-k", "--state-dir", "/tmp/s", "--jobs=2", "-j2", "-b", "cuda", "--all")
    assert a.recipes == ("gllm-kernels",) and a.named
    assert a.flags == ("-o", "kernels_root=/tmp/x", "--jobs=2", "-j2")
    assert a.build_flags == ("-k",)
    assert a.global_flags == ("--state-dir", "/tmp/s")
    a = split(repo_recipes, "build-cpu-3.11", "recipes/llaisys.yaml")
    assert a.recipes == ("recipes/llaisys.yaml",)


@pytest.mark.parametrize(("posargs", "message"), [
    (["nosuch"], "unknown recipe 'nosuch' (recipes build-cuda-3.11 builds: gllm-kernels, "
                 "llaisys)"),
    (["llaisy"], "did you mean 'llaisys'?"),
    (["libamm"], "recipe 'libamm' has no cuda backend (it declares cpu); sessions that "
                 "build it: build-cpu-3.9"),
    (["3.12"], "'3.12' is not a recipe: the Python version comes from the session name"),
    (["-b", "vulkan"], "unknown backend 'vulkan' (backends: cpu, cuda, rocm, metal)"),
    (["--backend=cpu"], "the backend comes from the session name: run `nox -s "
                        "build-cpu-3.11`"),
    (["-p", "3.12"], "run `nox -s build-cuda-3.12`"),
    (["-p", "3.14"], "no recipe supports cuda with Python 3.14, so there is no session "
                     "build-cuda-3.14 (Pythons for cuda: 3.9, 3.10, 3.11, 3.12, 3.13)"),
    (["-p", "all"], "each session builds one Python version"),
    (["-o"], "-o needs a value"),
])
def test_bad_posargs_say_what_to_run(repo_recipes: list[Recipe], posargs: list[str],
                                     message: str) -> None:
    with pytest.raises(MatrixError) as exc:
        split(repo_recipes, "build-cuda-3.11", *posargs)
    assert message in str(exc.value)
    assert exc.value.exit_code == 2


def test_recipe_without_that_python(repo_recipes: list[Recipe]) -> None:
    r = by_name(repo_recipes)
    short = [replace(r["llaisys"], python=PythonSpec(("3.12",), "none")), r["libamm"]]
    with pytest.raises(MatrixError, match=r"'llaisys' does not support Python 3\.11 "
                                                 r"\(it lists 3\.12\).*build-cpu-3\.12"):
        split(short, "build-cpu-3.11", "llaisys")


def test_unknown_session_hint(repo_recipes: list[Recipe]) -> None:
    all_s = matrix.sessions(repo_recipes, "3.11")
    assert matrix.unknown_session_hint("build-cpu-3.11", all_s) is None
    assert matrix.unknown_session_hint("lint", all_s) is None
    assert "unknown backend 'vulkan'" in str(matrix.unknown_session_hint("build-vulkan-3.11",
                                                                        all_s))
    hint = str(matrix.unknown_session_hint("build-cpu-3.8", all_s))
    assert "no recipe supports cpu with Python 3.8" in hint and "build-cpu-3.9" in hint


# ---------------------------------------------------------------------------- CI matrix


def test_ci_matrix_factors_python_independent_recipes(repo_recipes: list[Recipe]) -> None:
    m = cimatrix.ci_matrix(repo_recipes)
    got = [(j.session, j.recipes, j.narrowed) for j in m.jobs]
    assert got == [
        ("build-cpu-3.9", ("libamm",), True),
        ("build-cpu-3.10", ("libamm",), True),
        ("build-cpu-3.11", ("libamm", "llaisys"), False),
        ("build-cpu-3.12", ("libamm",), True),
        ("build-cpu-3.13", ("libamm",), True),
        ("build-cuda-3.11", ("gllm-kernels", "llaisys"), False),
        ("build-rocm-3.11", ("gllm-kernels",), False),
        ("build-metal-3.11", ("gllm-kernels",), False),
    ]
    assert (m.job_count, m.unfactored) == (8, 20)
    # every abi-none recipe once per backend, every cpython recipe once per Python
    for r in repo_recipes:
        for b in r.backend_names:
            n = sum(1 for j in m.jobs if j.backend == b and r.name in j.recipes)
            assert n == (1 if matrix.python_independent(r) else len(r.python.versions))
    runners = {j.backend: j.runner for j in m.jobs}
    assert runners["cpu"].runs_on == runners["rocm"].runs_on == "ubuntu-latest"
    assert runners["cuda"].container == "nvidia/cuda:13.0.0-devel-ubuntu24.04"
    assert runners["metal"].runs_on == "macos-14"
    assert m.jobs[0].nox_args == ("-s", "build-cpu-3.9", "--", "libamm")
    assert m.jobs[2].nox_args == ("-s", "build-cpu-3.11")
    assert m.jobs[0].requires_python == ("torch>=2.0", "numpy")


def test_ci_matrix_covers_disjoint_python_lists(repo_recipes: list[Recipe]) -> None:
    r = by_name(repo_recipes)
    recipes = [replace(r["llaisys"], python=PythonSpec(("3.12", "3.13"), "none")),
               replace(r["gllm-kernels"], python=PythonSpec(("3.9",), "none"))]
    m = cimatrix.ci_matrix(recipes)
    cuda = [(j.python, j.recipes) for j in m.jobs if j.backend == "cuda"]
    assert cuda == [("3.9", ("gllm-kernels",)), ("3.13", ("llaisys",))]
    # with a cpython recipe on the backend, the abi-none one rides on one of its jobs
    cp = replace(r["libamm"], backends=r["llaisys"].backends)
    m = cimatrix.ci_matrix([*recipes, cp])
    assert [j.python for j in m.jobs if j.backend == "cuda"] == list(ALL)
    assert sum("llaisys" in j.recipes for j in m.jobs if j.backend == "cuda") == 1


def test_ci_matrix_narrows_against_the_whole_project(repo_recipes: list[Recipe]) -> None:
    llaisys = [r for r in repo_recipes if r.name == "llaisys"]
    m = cimatrix.ci_matrix(llaisys, project=repo_recipes)
    assert [" ".join(j.nox_args) for j in m.jobs] == ["-s build-cpu-3.11 -- llaisys",
                                                      "-s build-cuda-3.11 -- llaisys"]
    assert m.unfactored == 10


def test_fixture_project_matrix_notes_the_default(fixture_recipes: list[Recipe]) -> None:
    m = cimatrix.ci_matrix(fixture_recipes, "3.11")
    assert [(j.session, j.recipes) for j in m.jobs] == [
        ("build-cpu-3.11", ("app", "greet")), ("build-cuda-3.11", ("kern", "vecadd"))]
    assert any("greet lists no python.versions" in n for n in m.notes)


def test_estimate_from_build_history(tmp_path: Path, repo_recipes: list[Recipe]) -> None:
    (tmp_path / ".builder-state").write_text("")  # a folder builder owns (the writer)
    r = by_name(repo_recipes)
    src = cimatrix.source_roots(r["llaisys"], tmp_path)
    assert src == (r["llaisys"].sources[0].location,)
    h = History(tmp_path / "memory-history.json")
    h.record("k1", f"{src[0]}/src/ops/add.cpp", 100 << 20, 12.5)
    h.record("k2", f"{src[0]}/src/ops/linear.cpp", 200 << 20, 30.0)
    h.record("k3", "/elsewhere/x.cpp", 1, 99.0)
    h.record("k4", f"{src[0]}/src/ops/nvidia/add.cu", 1, 8.0)  # only cuda compiles it
    h.save()
    hist = cimatrix.read_history(tmp_path / "memory-history.json")
    assert cimatrix.read_history(tmp_path / "missing.json") == {}
    roots = {n: cimatrix.source_roots(rec, tmp_path) for n, rec in r.items()}
    m = cimatrix.ci_matrix(repo_recipes, history=hist, roots=roots)
    jobs = {j.session: j for j in m.jobs}
    assert jobs["build-cpu-3.11"].cpu_seconds == 42.5
    assert jobs["build-cpu-3.11"].estimate == "42s + unknown (libamm)"
    assert jobs["build-cpu-3.9"].estimate == "unknown"
    assert jobs["build-cpu-3.9"].cpu_seconds is None
    assert jobs["build-cuda-3.11"].to_json()["seconds_by_recipe"] == {
        "gllm-kernels": None, "llaisys": 50.5}
    assert cimatrix.recipe_seconds(["/elsewhere"], {"/elsewhere/a.cu": 3661.0}, "cuda") == 3661.0
    assert cimatrix.recipe_seconds(["/elsewhere"], {"/elsewhere/a.cu": 3661.0}, "cpu") is None
    assert cimatrix.Job("cpu", "3.11", ("x",), False, cimatrix.runner_for("cpu"),
                      (("x", 3661.0),)).estimate == "1h01m"


def test_formats(repo_recipes: list[Recipe]) -> None:
    m = cimatrix.ci_matrix(repo_recipes)
    gh = m.github()
    assert len(gh["include"]) == 8
    assert gh["include"][0] == {
        "name": "build-cpu-3.9", "backend": "cpu", "python": "3.9", "session": "build-cpu-3.9",
        "posargs": "libamm", "runs-on": "ubuntu-latest", "container": "",
        "estimate": "unknown"}
    data = json.loads(json.dumps(m.to_json()))
    assert data["job_count"] == 8 and data["unfactored_job_count"] == 20
    assert data["jobs"][5]["container"].startswith("nvidia/cuda:13.0.0")
    text = m.text()
    assert "build-cpu-3.9 -- libamm" in text and "8 job(s)" in text


# ---------------------------------------------------------------------------- workflow


def test_committed_workflow_matches_the_generator() -> None:
    committed = REPO / ".github" / "workflows" / "build.yml"
    want = cimatrix.workflow(cimatrix.ci_matrix(RecipeSet.load(REPO / "recipes").recipes))
    assert committed.is_file(), "run `builder matrix --write-workflow`"
    assert committed.read_text(encoding="utf-8") == want, \
        "the workflow is stale: run `builder matrix --write-workflow` and commit it"


def test_workflow_runs_each_job_through_nox(repo_recipes: list[Recipe]) -> None:
    m = cimatrix.ci_matrix(repo_recipes)
    wf = yaml.safe_load(cimatrix.workflow(m))
    jobs = wf["jobs"]
    assert list(jobs) == [j.job_id for j in m.jobs]
    for j in m.jobs:
        steps = jobs[j.job_id]["steps"]
        runs = [s.get("run", "") for s in steps]
        assert "python -m pip install -e '.[test]' cmake ninja" in runs
        assert runs[-1] == "nox " + " ".join(j.nox_args)
        assert jobs[j.job_id]["runs-on"] == j.runner.runs_on
        setup = next(s for s in steps if s.get("uses", "").startswith("actions/setup-python"))
        assert setup["with"]["python-version"].split()[-1] == matrix.CI_PYTHON
        assert j.python in setup["with"]["python-version"].split()
    assert jobs["build-cuda-py311"]["container"]["image"] == \
        "nvidia/cuda:13.0.0-devel-ubuntu24.04"


# ---------------------------------------------------------------------------- CLI


def test_cli_matrix(project: Path, cli: Callable[..., CliResult]) -> None:
    r = cli("matrix", "--format", "json", cwd=project)
    assert r.code == 0, r.err
    want = cimatrix.ci_matrix(RecipeSet.load(project / "recipes").recipes)
    assert json.loads(r.out)["job_count"] == want.job_count
    r = cli("matrix", "app", "kern", "--format", "github", cwd=project)
    assert [e["session"] for e in json.loads(r.out)["include"]] == ["build-cpu-3.11",
                                                                   "build-cuda-3.11"]
    r = cli("matrix", "greet", cwd=project)
    assert r.code == 0 and "build-cpu-3.11 -- greet" in r.out
    r = cli("matrix", "nosuch", cwd=project)
    assert r.code == 2 and "unknown recipe 'nosuch'" in r.err
    r = cli("matrix", "--write-workflow", "greet", cwd=project)
    assert r.code == 2 and "drop the recipe names" in r.err
    r = cli("matrix", "--write-workflow", cwd=project)
    assert r.code == 0 and "wrote" in r.out
    written = (project / ".github" / "workflows" / "build.yml").read_text(encoding="utf-8")
    assert "nox -s build-cuda-3.11" in written
    r = cli("matrix", "--write-workflow", cwd=project)
    assert r.code == 0 and "up to date" in r.out


def test_estimate_from_history_named_as_builds_record_it(tmp_path: Path,
                                                         repo_recipes: list[Recipe]) -> None:
    """A build records a compile as ``<recipe>:<path below the source root>``
    (memory.compileid), wherever the source folder is: the matrix finds it by that name."""
    from builder.memory.compileid import compile_id

    (tmp_path / ".builder-state").write_text("")  # a folder builder owns (the writer)
    r = by_name(repo_recipes)
    root = r["libamm"].sources[0].location
    h = History(tmp_path / "memory-history.json")
    h.record("k1", compile_id(f"{root}/src/a.cpp", root, "/b", "libamm"), 1 << 20, 20.0)
    h.record("k2", compile_id(f"{root}/src/b.cpp", root, "/b", "libamm"), 1 << 20, 5.0)
    h.save()
    hist = cimatrix.read_history(tmp_path / "memory-history.json")
    roots = {n: cimatrix.source_roots(rec, tmp_path) for n, rec in r.items()}
    m = cimatrix.ci_matrix(repo_recipes, history=hist, roots=roots)
    job = next(j for j in m.jobs if j.session == "build-cpu-3.11")
    assert dict(job.to_json()["seconds_by_recipe"])["libamm"] == 25.0
