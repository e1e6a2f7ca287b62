"""The CI matrix: the build matrix of :mod:`builder.ci.sessions` factored into CI jobs, and
the GitHub workflow that runs them.

The code behind ``builder matrix``.  The functions here are pure (recipes and build
history in, data out); the few that read files say so (:func:`read_history`,
:func:`source_roots`).

* **CI jobs**: the sessions' (backend, Python) pairs, factored.  A recipe whose Python
  package carries no extension (``python.abi: none``) is built once per backend (its
  native build and its ``py3-none`` wheel serve every Python), so it rides in one job per
  backend, not one per Python; only ``abi: cpython`` recipes fan out over the Python axis.
  Each job names the runner its backend needs and an estimate of its CPU time from the
  build history.
* **Workflow**: ``.github/workflows/build.yml``, one job per matrix entry, each running
  its nox session (``builder matrix --write-workflow``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builder import backends as registry
from builder.backends import CiRunner
from builder.ci.sessions import (
    CI_PYTHON,
    backend_meanings,
    backend_order,
    python_independent,
    recipe_pythons,
    session_name,
    sessions,
    version_key,
)
from builder.recipe.model import Recipe

__all__ = [
    "WORKFLOW_HEADER",
    "WORKFLOW_PATH",
    "Job",
    "Matrix",
    "Runner",
    "ci_matrix",
    "is_workflow",
    "read_history",
    "recipe_seconds",
    "runner_for",
    "source_roots",
    "workflow",
]

WORKFLOW_PATH = Path(".github") / "workflows" / "build.yml"


#: where a backend's CI jobs run (each backend says: ``Backend.ci_runner``)
Runner = CiRunner


def runner_for(backend: str, target: str = "", kind: str = "") -> Runner:
    """The runner of a backend's CI jobs: its target platform's (data/targets.json), else
    its kind's."""
    from builder.backends.platforms import get as get_target

    t = get_target(target) if target else None
    if t is not None:
        return Runner(t.runs_on, setup=t.setup)
    name = kind or backend
    return registry.get(name if name in registry.names() else "cpu").ci_runner


# ---------------------------------------------------------------------------- CI matrix


@dataclass(frozen=True)
class Job:
    """One CI job: a nox session, narrowed to the recipes this job is for."""

    backend: str
    python: str
    recipes: tuple[str, ...]
    narrowed: bool  # fewer recipes than the session builds (named in the posargs)
    runner: Runner
    #: recipe → recorded compile seconds (None: no history for it)
    seconds: tuple[tuple[str, float | None], ...] = ()
    #: PEP 508 requirements the target Python needs (the recipes' requires.python)
    requires_python: tuple[str, ...] = ()

    @property
    def session(self) -> str:
        return session_name(self.backend, self.python)

    @property
    def job_id(self) -> str:
        return f"build-{self.backend}-py{self.python.replace('.', '')}"

    @property
    def nox_args(self) -> tuple[str, ...]:
        return ("-s", self.session, *(("--", *self.recipes) if self.narrowed else ()))

    @property
    def cpu_seconds(self) -> float | None:
        known = [s for _, s in self.seconds if s is not None]
        return round(sum(known), 1) if known else None

    @property
    def estimate(self) -> str:
        total = self.cpu_seconds
        if total is None:
            return "unknown"
        missing = [r for r, s in self.seconds if s is None]
        return _duration(total) + (f" + unknown ({', '.join(missing)})" if missing else "")

    def to_json(self) -> dict[str, Any]:
        return {"id": self.job_id, "session": self.session, "backend": self.backend,
                "python": self.python, "recipes": list(self.recipes),
                "nox": "nox " + " ".join(self.nox_args),
                "runs_on": self.runner.runs_on, "container": self.runner.container,
                "requires_python": list(self.requires_python),
                "cpu_seconds": self.cpu_seconds, "estimate": self.estimate,
                "seconds_by_recipe": dict(self.seconds)}


def _duration(seconds: float) -> str:
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


@dataclass(frozen=True)
class Matrix:
    jobs: tuple[Job, ...]
    #: jobs a plain backend × Python matrix would have (one per session)
    unfactored: int
    default_python: str
    notes: tuple[str, ...] = field(default=())

    @property
    def job_count(self) -> int:
        return len(self.jobs)

    def github(self) -> dict[str, Any]:
        """``strategy.matrix`` for a dynamic workflow (``fromJSON``)."""
        return {"include": [{"name": j.session, "backend": j.backend, "python": j.python,
                             "session": j.session, "posargs": " ".join(j.recipes)
                             if j.narrowed else "", "runs-on": j.runner.runs_on,
                             "container": j.runner.container, "estimate": j.estimate}
                            for j in self.jobs]}

    def to_json(self) -> dict[str, Any]:
        return {"job_count": self.job_count, "unfactored_job_count": self.unfactored,
                "default_python": self.default_python, "notes": list(self.notes),
                "jobs": [j.to_json() for j in self.jobs]}

    def text(self) -> str:
        rows = [("job", "runner", "recipes", "cpu time")]
        for j in self.jobs:
            where = j.runner.runs_on + (f" [{j.runner.container}]" if j.runner.container
                                        else "")
            rows.append((j.session + (" -- " + " ".join(j.recipes) if j.narrowed else ""),
                         where, ", ".join(j.recipes), j.estimate))
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r[:3], widths, strict=True)) + "  " + r[3]
                 for r in rows]
        lines.append(f"{self.job_count} job(s) (a plain backend × Python matrix would have "
                     f"{self.unfactored}); Python-independent recipes are built once per "
                     f"backend")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines) + "\n"


def _pick_python(candidates: Mapping[str, set[str]], existing: set[str],
                 default_python: str) -> str:
    """The Python for the next Python-independent job: one that already has a job for the
    backend (it costs nothing extra), then the one covering most recipes, then the
    default, then the newest."""
    return max(candidates, key=lambda py: (py in existing, len(candidates[py]),
                                           py == default_python, version_key(py)))




def recipe_seconds(roots: Iterable[str], history: Mapping[str, float],
                   backend: str = "", scope: str = "") -> float | None:
    """Sum of recorded compile seconds of the files below ``roots`` and of the compiles
    the build recorded under the recipe's name ``scope`` (``<recipe>:<path>``, as
    ``memory.compileid`` names them) — None: none recorded —, leaving out files that only
    another backend compiles (``.cu`` for a cpu job)."""
    prefixes = tuple(str(Path(r)).rstrip("/") + "/" for r in roots if r) + \
        ((f"{scope}:",) if scope else ())
    only = {suffix: be.name for be in registry.backends() for suffix in be.source_suffixes}
    found = [s for f, s in history.items() if prefixes and f.startswith(prefixes) and
             only.get(Path(f).suffix, backend) == backend] if prefixes else []
    return round(sum(found), 1) if found else None


def ci_matrix(recipes: Iterable[Recipe], default_python: str = CI_PYTHON,
              history: Mapping[str, float] | None = None,
              roots: Mapping[str, Sequence[str]] | None = None,
              project: Iterable[Recipe] | None = None) -> Matrix:
    """The CI jobs for ``recipes``: one per (backend, Python) a cpython recipe needs, plus
    as few as cover the Python-independent recipes of each backend (one, normally).

    ``history`` maps source files to their recorded compile seconds and ``roots`` maps
    recipe names to their source folders (see :func:`read_history`, :func:`source_roots`).
    ``project`` is every recipe of the project (default: ``recipes``): the nox sessions are
    made from it, so a job names its recipes whenever it builds fewer than its session.
    """
    recipes = sorted(recipes, key=lambda r: r.name)
    history = history or {}
    roots = roots or {}
    all_sessions = sessions(recipes if project is None else project, default_python)
    jobs: dict[tuple[str, str], set[str]] = {}
    backends = sorted({b for r in recipes for b in r.backend_names}, key=backend_order)
    for b in backends:
        mine = [r for r in recipes if r.backend(b) is not None]
        for r in mine:
            if not python_independent(r):
                for py in recipe_pythons(r, default_python):
                    jobs.setdefault((b, py), set()).add(r.name)
        left = {r.name: set(recipe_pythons(r, default_python)) for r in mine
                if python_independent(r) and recipe_pythons(r, default_python)}
        while left:
            cands: dict[str, set[str]] = {}
            for name, pys in left.items():
                for py in pys:
                    cands.setdefault(py, set()).add(name)
            py = _pick_python(cands, {p for (bb, p) in jobs if bb == b}, default_python)
            jobs.setdefault((b, py), set()).update(cands[py])
            for name in cands[py]:
                del left[name]
    by_name = {r.name: r for r in recipes}
    meaning = backend_meanings(recipes)
    session_recipes = {(s.backend, s.python): s.recipes for s in all_sessions}
    out: list[Job] = []
    for (b, py), names in sorted(jobs.items(), key=lambda kv: (backend_order(kv[0][0]),
                                                               version_key(kv[0][1]))):
        chosen = tuple(sorted(names))
        reqs = tuple(dict.fromkeys(q for n in chosen for q in by_name[n].requires.python))
        secs = tuple((n, recipe_seconds(roots.get(n, ()), history, b, scope=n))
                     for n in chosen)
        kind, target = meaning[b]
        out.append(Job(b, py, chosen, chosen != session_recipes[(b, py)],
                       runner_for(b, target, kind), secs, reqs))
    notes = []
    for r in recipes:
        if not r.python.versions:
            notes.append(f"{r.name} lists no python.versions: built with Python "
                         f"{default_python}")
    return Matrix(tuple(out), len(sessions(recipes, default_python)), default_python,
                  tuple(notes))


# ---------------------------------------------------------------------------- file readers


def read_history(path: Path) -> dict[str, float]:
    """Source file → recorded compile seconds, from ``<state>/memory-history.json``
    (the latest record per file; {} when there is no history)."""
    from builder.memory.history import History

    if not path.is_file():
        return {}
    return {f: float(rec.get("seconds", 0.0)) for f, rec in History(path).by_file.items()
            if f and rec.get("seconds")}


def source_roots(recipe: Recipe, state_dir: Path) -> tuple[str, ...]:
    """Folders holding ``recipe``'s sources on this machine (fetched ones under the state)."""
    from builder.source.fetch import source_key
    from builder.util.files import file_sha256

    out: list[str] = []
    for s in recipe.sources:
        if s.kind == "path":
            out.append(s.location)
            continue
        digests = tuple(file_sha256(Path(p)) if Path(p).is_file() else "" for p in s.patches)
        out.append(str(state_dir / "sources" / source_key(s.kind, s.location, s.rev, s.sha256,
                                                          digests)))
    return tuple(out)


# ---------------------------------------------------------------------------- workflow


def _q(text: str) -> str:
    """A YAML scalar: JSON's quoting is valid YAML."""
    return json.dumps(text)


WORKFLOW_HEADER = "# Generated by `builder matrix --write-workflow`"


def is_workflow(head: bytes) -> bool:
    """The workflow file builder wrote (its header): replaced without --force."""
    return head.startswith(WORKFLOW_HEADER.encode())


def workflow(matrix: Matrix) -> str:
    """``.github/workflows/build.yml``: one job per matrix entry, each running its nox
    session.  Deterministic: a test compares the committed file with this."""
    out = [
        "# Generated by `builder matrix --write-workflow` from recipes/*.yaml: do not edit.",
        "# tests/unit/test_matrix.py checks that this file matches the generator.",
        f"# {matrix.job_count} jobs (a plain backend x Python matrix would have "
        f"{matrix.unfactored}): recipes",
        "# without a Python extension (python.abi: none) are built once per backend.",
        "name: build",
        "on:",
        "  push:",
        "  pull_request:",
        "  workflow_dispatch:",
        "permissions:",
        "  contents: read",
        "env:",
        "  UV_PYTHON_DOWNLOADS: never",
        "  PIP_DISABLE_PIP_VERSION_CHECK: \"1\"",
        "jobs:",
    ]
    for j in matrix.jobs:
        r = j.runner
        out += [f"  {j.job_id}:",
                f"    name: {_q(' '.join(('nox', *j.nox_args)))}",
                f"    runs-on: {r.runs_on}"]
        if r.container:
            out += ["    container:", f"      image: {r.container}"]
        if r.env:
            out.append("    env:")
            out += [f"      {k}: {_q(v)}" for k, v in r.env]
        out.append("    steps:")
        if r.setup and r.container:  # the image lacks what checkout/setup-python need
            out += ["      - name: system packages",
                    "        run: |",
                    *[f"          {line}" for line in r.setup]]
        out += ["      - uses: actions/checkout@v4",
                "      - uses: actions/setup-python@v5",
                "        with:",
                "          python-version: |"]
        pys = [j.python] if j.python == matrix.default_python else [j.python,
                                                                    matrix.default_python]
        out += [f"            {py}" for py in pys]  # the last one is the default `python`
        if r.setup and not r.container:
            out += ["      - name: system packages",
                    "        run: |",
                    *[f"          {line}" for line in r.setup]]
        if j.requires_python:
            index = "" if r.runs_on.startswith("macos") else \
                " --extra-index-url https://download.pytorch.org/whl/cpu"
            reqs = " ".join(_shell_quote(q) for q in j.requires_python)
            out += [f"      - name: Python {j.python} requirements of the recipes",
                    f"        run: python{j.python} -m pip install{index} {reqs}"]
        out += ["      - name: builder, nox and the build tools",
                "        run: python -m pip install -e '.[test]' cmake ninja",
                f"      - name: {' '.join(('nox', *j.nox_args))}",
                f"        run: nox {' '.join(j.nox_args)}"]
    return "\n".join(out) + "\n"


def _shell_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)
