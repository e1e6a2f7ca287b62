"""The build matrix: which (backend, Python) pairs the recipes ask for, as nox sessions.

One copy of the logic, shared by ``noxfile.py`` and ``builder matrix`` (which factors the
same pairs into CI jobs: :mod:`builder.ci.jobs`).  The functions here are pure (recipes
and host facts in, data out).

* **Sessions** (``build-<backend>-<python>``): every backend × Python version that some
  recipe supports.  A recipe without ``python.versions`` counts as supporting the host's
  default Python.  A session builds every recipe that supports its pair.
* **Posargs** (``nox -s build-B-P -- …``): recipe names narrow a session, builder options
  pass through; naming another backend, Python or a recipe the session does not build
  is a :class:`MatrixError` that says which session to run instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from builder import backends as registry
from builder.errors import MatrixError
from builder.host.facts import HostFacts
from builder.recipe.model import Recipe

__all__ = [
    "CI_PYTHON",
    "BuildArgs",
    "Session",
    "Unavailable",
    "backend_order",
    "python_independent",
    "recipe_pythons",
    "session_name",
    "session_unavailable",
    "sessions",
    "split_posargs",
    "supports",
    "unknown_session_hint",
    "version_key",
]

#: The interpreter CI jobs run builder and nox with (actions/setup-python installs it last,
#: so it is the default ``python``).  The CI matrix uses it, not this host's default, so that
#: the generated workflow does not depend on who generates it.
CI_PYTHON = "3.11"

#: builder options that take a value in the next argument (for splitting nox posargs)
_VALUE_FLAGS = frozenset({"-o", "--option", "-j", "--jobs", "--memory-budget", "--build-type",
                          "-b", "--backend", "-p", "--python"})
#: options of the top-level ``builder`` command: they must come before the subcommand
_GLOBAL_FLAGS = frozenset({"-C", "--project", "--state-dir"})
#: options ``builder build`` has and ``builder plan`` does not
_BUILD_ONLY = frozenset({"-k", "--keep-going", "--no-wait", "-v", "--verbose", "-q",
                         "--quiet"})



def backend_meanings(recipes: Iterable[Recipe]) -> dict[str, tuple[str, str]]:
    """Backend name → (kind, target), from the recipes that declare it."""
    out: dict[str, tuple[str, str]] = {}
    for r in recipes:
        for b in r.backends:
            out.setdefault(b.name, (b.backend_kind, b.target))
    return out


def version_key(version: str) -> tuple[int, ...]:
    """``"3.9"`` < ``"3.10"``: compare Python versions as numbers."""
    try:
        return tuple(int(x) for x in version.split("."))
    except ValueError:
        return (999,)


def backend_order(name: str) -> tuple[int, str]:
    order = registry.names()
    return (order.index(name) if name in order else len(order), name)


def session_name(backend: str, python: str) -> str:
    return f"build-{backend}-{python}"


def recipe_pythons(recipe: Recipe, default_python: str) -> tuple[str, ...]:
    """The Python versions a recipe is built for (the default one when it lists none)."""
    return recipe.python.versions or ((default_python,) if default_python else ())


def python_independent(recipe: Recipe) -> bool:
    """Is the native build the same for every Python (no extension module, or one on the
    stable ABI: ``abi3`` serves every Python from its limited API on)?"""
    return recipe.python.abi != "cpython"


def supports(recipe: Recipe, backend: str, python: str, default_python: str) -> bool:
    return recipe.backend(backend) is not None and \
        python in recipe_pythons(recipe, default_python)


# ---------------------------------------------------------------------------- sessions


@dataclass(frozen=True)
class Session:
    """One ``build-<backend>-<python>`` nox session: every recipe that supports the pair."""

    backend: str
    python: str
    recipes: tuple[str, ...]
    #: the subset whose native build does not depend on Python (abi none)
    independent: tuple[str, ...] = ()
    kind: str = ""  # the registry backend ("" = the backend's name)
    target: str = ""  # the target platform ("" = the host's)

    @property
    def name(self) -> str:
        return session_name(self.backend, self.python)

    @property
    def description(self) -> str:
        parts = [r + ("" if r in self.independent else " (cpython)") for r in self.recipes]
        return f"Build {', '.join(parts)} for {self.backend} with Python {self.python}"


def sessions(recipes: Iterable[Recipe], default_python: str) -> list[Session]:
    """Every (backend, Python) pair some recipe supports, in backend then version order."""
    recipes = sorted(recipes, key=lambda r: r.name)
    pairs: dict[tuple[str, str], list[Recipe]] = {}
    for r in recipes:
        for b in r.backend_names:
            for py in recipe_pythons(r, default_python):
                pairs.setdefault((b, py), []).append(r)
    meaning = backend_meanings(recipes)
    out = [Session(b, py, tuple(r.name for r in rs),
                   tuple(r.name for r in rs if python_independent(r)),
                   *(("", "") if meaning[b] == (b, "") else meaning[b]))
           for (b, py), rs in pairs.items()]
    out.sort(key=lambda s: (backend_order(s.backend), version_key(s.python)))
    return out


@dataclass(frozen=True)
class Unavailable:
    reason: str
    fix: str


def session_unavailable(session: Session, host: HostFacts) -> Unavailable | None:
    """Why this host cannot run ``session`` at all (backend or interpreter missing)."""
    kind = session.kind or session.backend
    if kind not in registry.names():
        return Unavailable(f"unknown backend '{session.backend}'",
                           f"backends: {', '.join(registry.names())}")
    if session.target:
        from builder.backends.platforms import for_host

        _, off = for_host(session.target, host, session.backend)
        if off is not None:
            return Unavailable(off.reason, off.fix)
    why = registry.get(kind).host_unavailable(host)
    if why is not None:
        return Unavailable(why.reason, why.fix)
    if host.python(session.python) is None:
        found = ", ".join(p.version for p in host.pythons) or "none"
        return Unavailable(
            f"no Python {session.python} interpreter on this host (found: {found}; "
            f"looked on PATH and in pyenv's versions)",
            f"install Python {session.python} (e.g. `pyenv install {session.python}`)")
    return None


def unknown_session_hint(name: str, all_sessions: Sequence[Session]) -> str | None:
    """What is wrong with a ``build-<backend>-<python>`` name that is not a session (None
    when it is one, or does not look like a build session at all)."""
    if not name.startswith("build-") or any(s.name == name for s in all_sessions):
        return None
    backend, _, python = name.removeprefix("build-").rpartition("-")
    if not backend or not python:
        return None
    known = _known_backends(all_sessions)
    if backend not in known:
        return (f"{name}: unknown backend '{backend}' (backends: "
                f"{', '.join(known)}); `nox -l` lists the sessions")
    mine = [s for s in all_sessions if s.backend == backend]
    if not mine:
        return f"{name}: no recipe declares the {backend} backend, so it has no sessions"
    return (f"{name}: no recipe supports {backend} with Python {python} (sessions for "
            f"{backend}: {', '.join(s.name for s in mine)})")


@dataclass(frozen=True)
class BuildArgs:
    """nox posargs of a build session, split for ``builder``."""

    recipes: tuple[str, ...]  # the recipes to build (the session's own when none were named)
    named: bool  # were recipes named in the posargs?
    global_flags: tuple[str, ...] = ()  # before the subcommand (-C, --state-dir)
    flags: tuple[str, ...] = ()  # for both plan and build (-o, -j, --build-type, …)
    build_flags: tuple[str, ...] = ()  # for build only (-k, -v, -q, --no-wait)


def _flag_name(token: str) -> str:
    if token.startswith("--"):
        return token.split("=", 1)[0]
    return token[:2] if token.startswith("-") else token


def split_posargs(posargs: Sequence[str], session: Session, all_sessions: Sequence[Session],
                  recipes: Iterable[Recipe], default_python: str) -> BuildArgs:
    """Check and split ``nox -s build-B-P -- …``: recipe names narrow the session; builder
    options pass through.  The backend and Python come from the session name: naming
    another one (or an unknown one, or a recipe that does not support the pair) raises
    :class:`MatrixError` with what to run instead."""
    by_name = {r.name: r for r in recipes}
    names: list[str] = []
    global_flags: list[str] = []
    flags: list[str] = []
    build_flags: list[str] = []
    i = 0
    while i < len(posargs):
        tok = posargs[i]
        flag = _flag_name(tok)
        attached = (tok.startswith("--") and "=" in tok) or \
            (not tok.startswith("--") and tok.startswith("-") and len(tok) > 2)
        raw = [tok]  # the tokens as given, passed on unchanged
        value = ""
        if tok.startswith("-") and flag in (_VALUE_FLAGS | _GLOBAL_FLAGS) and not attached:
            if i + 1 >= len(posargs):
                raise MatrixError(f"{tok} needs a value")
            value = posargs[i + 1]
            raw.append(value)
            i += 1
        elif attached:
            value = tok.split("=", 1)[1] if tok.startswith("--") else tok[2:]
        i += 1
        if not tok.startswith("-"):
            names.append(tok)
        elif flag in ("-b", "--backend"):
            _check_pair(value, session.python, session, all_sessions, "backend")
        elif flag in ("-p", "--python"):
            _check_pair(session.backend, value, session, all_sessions, "python")
        elif flag == "--all":
            continue  # the session already builds every recipe that supports its pair
        elif flag in _GLOBAL_FLAGS:
            global_flags += raw
        elif flag in _BUILD_ONLY:
            build_flags += raw
        else:
            flags += raw
    for n in names:
        if n.endswith((".yaml", ".yml")) or "/" in n:
            continue  # a recipe file: builder checks it
        _check_recipe(n, session, all_sessions, by_name, default_python)
    return BuildArgs(tuple(dict.fromkeys(names)) or session.recipes, bool(names),
                     tuple(global_flags), tuple(flags), tuple(build_flags))


def _known_backends(all_sessions: Sequence[Session]) -> list[str]:
    """The built-in backends and those the recipes name (arm, macos, …)."""
    return list(dict.fromkeys([*registry.names(), *(s.backend for s in all_sessions)]))


def _names_for(backend: str, all_sessions: Sequence[Session]) -> str:
    return ", ".join(s.name for s in all_sessions if s.backend == backend) or "none"


def _check_pair(backend: str, python: str, session: Session, all_sessions: Sequence[Session],
                what: str) -> None:
    if backend == session.backend and python == session.python:
        return  # says what the session name says already
    known = _known_backends(all_sessions)
    if backend not in known:
        raise MatrixError(f"unknown backend '{backend}' (backends: {', '.join(known)})")
    if python == "all":
        raise MatrixError(f"--python all: each session builds one Python version; run the "
                          f"sessions for {backend}: {_names_for(backend, all_sessions)}")
    target = session_name(backend, python)
    if any(s.name == target for s in all_sessions):
        raise MatrixError(f"{session.name} builds {session.backend} with Python "
                          f"{session.python}; the {what} comes from the session name: run "
                          f"`nox -s {target}`")
    pythons = ", ".join(s.python for s in all_sessions if s.backend == backend) or "none"
    raise MatrixError(f"no recipe supports {backend} with Python {python}, so there is no "
                      f"session {target} (Pythons for {backend}: {pythons})")


def _check_recipe(name: str, session: Session, all_sessions: Sequence[Session],
                  by_name: Mapping[str, Recipe], default_python: str) -> None:
    if name in session.recipes:
        return
    r = by_name.get(name)
    if r is None:
        if version_key(name) != (999,):
            raise MatrixError(f"'{name}' is not a recipe: the Python version comes from the "
                              f"session name (build-<backend>-<python>; sessions for "
                              f"{session.backend}: {_names_for(session.backend, all_sessions)})")
        import difflib

        close = difflib.get_close_matches(name, list(by_name), n=1)
        raise MatrixError(f"unknown recipe '{name}'" +
                          (f" — did you mean '{close[0]}'?" if close else "") +
                          f" (recipes {session.name} builds: {', '.join(session.recipes)})")
    where = [s.name for s in all_sessions if name in s.recipes]
    if r.backend(session.backend) is None:
        raise MatrixError(f"recipe '{name}' has no {session.backend} backend (it declares "
                          f"{', '.join(r.backend_names)}); sessions that build it: "
                          f"{', '.join(where)}")
    raise MatrixError(f"recipe '{name}' does not support Python {session.python} (it lists "
                      f"{', '.join(recipe_pythons(r, default_python))}); sessions that build "
                      f"it for {session.backend}: "
                      f"{', '.join(w for w in where if w.startswith(f'build-{session.backend}-'))}")
