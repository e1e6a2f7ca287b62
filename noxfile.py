"""builder's nox sessions: build-<backend>-<python> for every pair some recipe supports
(`nox -s build-cuda-3.11 -- gllm-kernels -o kernels_root=/tmp/k` narrows one and passes
builder options through), and tests, lint, typecheck (what a bare `nox` runs).

Sessions come from the recipes through builder.ci.sessions (the code behind `builder matrix`).
builder runs on the interpreter running nox; each build session's uv venv, made from the
interpreter builder's host probe found for its version, installs and imports the built
wheels and runs the recipes' Python tests against them (the venv sees the packages of that
interpreter, as builder checked them). A session this host cannot run ends as a nox skip
with the reason.

In the list below, nox's `*` marks what a bare `nox` runs and `-` every other session
(nox's legend calls them "skipped": they are only not selected by default; `nox -s NAME`
runs one). "[cannot run here: …]" marks the build sessions this host cannot run."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import nox

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # builder from this checkout, installed or not

from builder.ci import sessions as matrix  # noqa: E402
from builder.errors import BuilderError, MatrixError  # noqa: E402
from builder.host.facts import HostFacts  # noqa: E402
from builder.host.probe import probe  # noqa: E402
from builder.recipe.model import Recipe  # noqa: E402
from builder.recipe.recipeset import RecipeSet  # noqa: E402
from builder.workspace.paths import Workspace  # noqa: E402

os.environ.setdefault("UV_PYTHON_DOWNLOADS", "never")  # else uv tries to download, slowly
nox.options.default_venv_backend = "uv"
nox.options.download_python = "never"
nox.options.sessions = ["lint", "typecheck", "tests"]  # what a bare `nox` runs

BUILDER = (sys.executable, "-m", "builder")


def _project() -> tuple[Workspace, list[Recipe], HostFacts, str]:
    """The project's recipes and this host, or why the recipes could not be loaded."""
    state = os.environ.get("BUILDER_STATE_DIR")
    ws = Workspace.at(ROOT, Path(state) if state else None)
    try:
        recipes = RecipeSet.load(ws.recipes_dir).recipes
    except BuilderError as exc:
        return ws, [], probe(ws.host_cache), exc.render()
    from packaging.requirements import Requirement

    pkgs = sorted({Requirement(t).name.lower() for r in recipes for t in r.requires.python})
    return ws, recipes, probe(ws.host_cache, tuple(pkgs)), ""


WS, RECIPES, HOST, LOAD_ERROR = _project()
SESSIONS = matrix.sessions(RECIPES, HOST.default_python)


# ---------------------------------------------------------------------------- checks


@nox.session(python=False)
def tests(session: nox.Session) -> None:
    """The project's test suite (pytest) on the interpreter running nox."""
    session.run(sys.executable, "-m", "pytest", *session.posargs, external=True)


@nox.session(python=False)
def lint(session: nox.Session) -> None:
    """ruff check on builder/, tests/ and this file; the import contracts (lint-imports:
    phases point down, no cycles — pyproject.toml's [tool.importlinter])."""
    session.run(sys.executable, "-m", "ruff", "check", "builder", "tests", "noxfile.py",
                *session.posargs, external=True)
    lint_imports = Path(sys.executable).with_name("lint-imports")
    session.run(str(lint_imports) if lint_imports.exists() else "lint-imports", external=True)


@nox.session(python=False)
def typecheck(session: nox.Session) -> None:
    """mypy --strict on builder/."""
    session.run(sys.executable, "-m", "mypy", "--strict", "-p", "builder", *session.posargs,
                external=True)


# ---------------------------------------------------------------------------- builds


def _plan(session: nox.Session, args: matrix.BuildArgs, spec: matrix.Session) -> dict[str, object]:
    argv = [*BUILDER, *args.global_flags, "plan", *args.recipes, "--backend", spec.backend,
            "--python", spec.python, "--skip-unsupported", *args.flags, "--format", "json"]
    session.log(shlex.join(argv))
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        session.error(f"builder plan failed (exit {proc.returncode})")
    data: dict[str, object] = json.loads(proc.stdout)
    return data


def _top_level(wheel: Path) -> list[str]:
    """Importable names at the top of a wheel (packages and modules)."""
    names: set[str] = set()
    with zipfile.ZipFile(wheel) as z:
        for n in z.namelist():
            head, _, rest = n.partition("/")
            if head.endswith((".dist-info", ".data")):
                continue
            if rest and rest.endswith("__init__.py") and rest.count("/") == 0:
                names.add(head)
            elif not rest and head.endswith(".py"):
                names.add(head[:-3])
    return sorted(names)


def _check_wheels(session: nox.Session, plan: dict[str, object], spec: matrix.Session) -> None:
    steps = plan.get("steps", [])
    assert isinstance(steps, list)
    wheels = [s for s in steps if s.get("kind") == "wheel" and s.get("status") != "skip"
              and s.get("outputs")]
    if not wheels:
        session.log("no wheel step in the plan: nothing to install and import")
        return
    cp = "cp" + spec.python.replace(".", "")
    for step in wheels:
        # a wheel step writes its wheel into a folder: the name matches the plan's glob
        # (auditwheel picks the platform tag when it repairs the wheel)
        folder, pattern = Path(step["outputs"][0]), (step.get("payload") or {}).get("glob", "")
        found = sorted(folder.glob(pattern)) if folder.is_dir() and pattern else []
        if not found:
            session.error(f"the plan's wheel {folder / (pattern or '*.whl')} was not written "
                          f"by the build")
        wheel = found[-1]
        tag = "-".join(wheel.stem.split("-")[-3:])
        if tag.startswith("cp") and not tag.startswith(f"{cp}-"):
            session.log(f"{wheel.name}: for another Python ({tag}), not installed here")
            continue
        # --no-deps: the build checked that this interpreter has the recipe's requirements
        # (the venv sees them through --system-site-packages); pip must not fetch torch.
        session.install("--no-deps", "--force-reinstall", str(wheel))
        for name in _top_level(wheel):
            session.run("python", "-c", f"import {name}; print('imported', {name}.__name__, "
                        f"'from', {name}.__file__)")
        _test_installed(session, steps, step)


def _test_installed(session: nox.Session, steps: list[Any], wheel_step: dict[str, Any]) -> None:
    """Run the variant's Python test steps again, now against the installed wheel: the
    session's python instead of the build's interpreter, without the PYTHONPATH that pointed
    the build's tests into its install tree."""
    variant = wheel_step.get("variant")
    tests = [s for s in steps if s.get("kind") == "test" and s.get("variant") == variant
             and s.get("status") != "skip" and s.get("commands")]
    for t in tests:
        argv = list(t["commands"][0])
        if not Path(argv[0]).name.startswith("python"):
            continue  # ctest and friends test the native build, not the wheel
        env = {k: v for k, v in t.get("env", []) if k != "PYTHONPATH"}
        cwd = t.get("cwd") or "."
        session.log(f"{t['id']}: against the installed wheel")
        with session.chdir(cwd):
            session.run("python", *argv[1:], env=env)


_SITE_PROBE = ("import json, site, sys; print(json.dumps([sys.prefix != sys.base_prefix, "
               "site.getsitepackages(), sysconfig.get_paths()['purelib']]))")


_DISTS = """import importlib.metadata as m, json, sys
out = {}
for n in sys.argv[1:]:
    try:
        d = m.distribution(n)
        out[n] = [d.version, str(d.locate_file(""))]
    except m.PackageNotFoundError:
        out[n] = None
print(json.dumps(out))"""


def _site(python: str) -> tuple[bool, list[str], str]:
    """Whether ``python`` is a virtual environment, its site folders and its purelib."""
    proc = subprocess.run([python, "-c", "import sysconfig; " + _SITE_PROBE],
                          capture_output=True, text=True, check=True)
    is_venv, dirs, purelib = json.loads(proc.stdout)
    return bool(is_venv), [str(d) for d in dirs], str(purelib)


def _inherit(session: nox.Session, spec: matrix.Session, recipes: set[str]) -> None:
    """The session's venv sees the packages of the interpreter builder checked (the recipes'
    requires.python, torch included): `--system-site-packages` alone gives the *base*
    interpreter's, which is another set when builder's interpreter is itself a venv. A .pth
    file adds that venv's site folders (with their own .pth files: editable installs), ahead
    of the base's. Then every requirement must resolve to the version builder checked."""
    info = HOST.python(spec.python)
    assert info is not None  # else the session was skipped
    mine = str(Path(session.bin) / "python")
    is_venv, dirs, _ = _site(info.path)
    _, _, session_site = _site(mine)
    if is_venv:
        Path(session_site, "_builder_checked_python.pth").write_text(
            "".join(f"import site; site.addsitedir({d!r})\n" for d in dirs))
        session.log(f"the session sees the packages of {info.path} ({', '.join(dirs)})")
    from packaging.requirements import Requirement

    names = sorted({Requirement(t).name for r in RECIPES if r.name in recipes
                    for t in r.requires.python})
    if not names:
        return
    def versions(python: str) -> dict[str, list[str] | None]:
        """Each requirement's installed version and folder, as ``python`` sees them."""
        proc = subprocess.run([python, "-c", _DISTS, *names], capture_output=True, text=True,
                              check=True)
        found: dict[str, list[str] | None] = json.loads(proc.stdout)
        return found

    seen, checked = versions(mine), versions(info.path)
    wrong = [f"{n}: {' in '.join(seen[n] or ['not installed'])} in the session, "
             f"{' in '.join(checked[n] or ['not installed'])} for builder"
             for n in names if seen[n] != checked[n]]
    if wrong:
        session.error(f"the session's venv does not see what builder checked in {info.path}: "
                      + "; ".join(wrong))
    session.log("the recipes' requirements, as builder checked them: " + ", ".join(
        f"{n} {v[0]} ({v[1]})" for n, v in seen.items() if v))


def _build(session: nox.Session, spec: matrix.Session) -> None:
    try:
        args = matrix.split_posargs(session.posargs, spec, SESSIONS, RECIPES,
                                    HOST.default_python)
    except MatrixError as exc:
        session.error(str(exc))
    plan = _plan(session, args, spec)
    variants = plan.get("variants", [])
    assert isinstance(variants, list)
    skipped = [v for v in variants if v.get("status") == "skip"]
    for v in skipped:
        session.log(f"skipped {v['id']}: {v['reason']}" + (f" (fix: {v['fix']})"
                                                            if v.get("fix") else ""))
    if variants and len(skipped) == len(variants):
        reasons = "; ".join(dict.fromkeys(f"{v['recipe']}: {v['reason']}" for v in skipped))
        session.skip(f"nothing {spec.name} can build on this host: {reasons}")
    _inherit(session, spec, {str(v["recipe"]) for v in variants if v.get("status") != "skip"})
    session.run(*BUILDER, *args.global_flags, "build", *args.recipes, "--backend", spec.backend,
                "--python", spec.python, "--skip-unsupported", *args.flags, *args.build_flags,
                external=True)
    _check_wheels(session, plan, spec)


def _register(spec: matrix.Session) -> None:
    why = matrix.session_unavailable(spec, HOST)
    py = HOST.python(spec.python)
    description = spec.description + (f" [cannot run here: {why.reason}]" if why else "")

    def run(session: nox.Session) -> None:
        if why is not None:
            session.skip(f"{why.reason} (fix: {why.fix})")
        _build(session, spec)

    run.__doc__ = description
    # Sessions that cannot run here get no virtual environment (their skip is immediate);
    # the others get one of the interpreter the host probe found, by absolute path.
    nox.session(name=spec.name, python=py.path if py and why is None else False,
                venv_params=["--system-site-packages"] if why is None else [])(run)


for _spec in SESSIONS:
    _register(_spec)


def _explain_unknown_sessions(argv: list[str]) -> None:
    """nox only says "Sessions not found"; say what is wrong with a build-B-P name."""
    wanted: list[str] = []
    for i, tok in enumerate(argv):
        if tok in ("-s", "-e", "--session", "--sessions"):
            wanted += _until_flag(argv[i + 1:])
    for name in wanted:
        if LOAD_ERROR and name.startswith("build-"):
            print("nox > the recipes do not load, so there are no build sessions: run "
                  "`nox -s build` for why", file=sys.stderr)
            return
        hint = matrix.unknown_session_hint(name, SESSIONS)
        if hint:
            print(f"nox > {hint}", file=sys.stderr)


def _until_flag(tokens: list[str]) -> list[str]:
    out: list[str] = []
    for t in tokens:
        if t.startswith("-"):
            break
        out.append(t)
    return out


_explain_unknown_sessions(sys.argv)

if LOAD_ERROR:

    @nox.session(python=False, name="build")
    def build_error(session: nox.Session) -> None:
        """The recipes do not load, so there are no build sessions: run this for why."""
        session.error(LOAD_ERROR)
