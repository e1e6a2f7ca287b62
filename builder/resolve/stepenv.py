"""The one place that composes the environment a step runs with.

A step never inherits the environment of the shell that ran builder: a ``CXXFLAGS``,
``CPATH``, ``PKG_CONFIG_PATH``, ``CMAKE_*`` or ``CONAN_*`` left there would reach CMake or
the compiler without being part of any key, and "nothing to do" would serve what another
shell built.  A step's environment is, in this order (a later layer wins):

1. **the base** (:func:`variant_env`, pure, shown by ``builder plan``): ``PATH`` made of
   the folders of the tools the plan resolved (builder's own interpreter's folder first,
   as the probe looks there first) and the system's standard folders; ``HOME`` and
   ``TMPDIR`` inside builder's state folder; a fixed locale (``LC_ALL``/``LANG``);
   ``PYTHONPATH`` only with the entries builder itself runs from (its compiler launchers
   run ``python -m builder.memory.launcher``); ``CUDAHOSTCXX``, the resolved C++
   compiler (CMake would otherwise take nvcc's default host compiler); the variables of
   the recipe's options that name one (``options[].env``), set to the option's value; and
   the **pass-through** variables — ``--env NAME`` and ``BUILDER_PASS_ENV=A,B`` — with the
   values they had when the plan was made.  Those values enter the compile key
   (``KeyInputs.env``, under ``--env NAME``), so passing, changing or dropping one
   rebuilds;
2. **the step's own changes** (``Step.env``: ``build.env``, a test's ``env``,
   ``CONAN_HOME``, the compiler cache's settings, the memory launcher's variables…);
3. **the host's variables a kind of step needs at run time** (:data:`RUNTIME_PASS`),
   read when the step starts and never written into a plan: a fetch or a download talks
   to a server (proxies, certificates, Conan's login variables, the real ``HOME`` for git's
   and ssh's configuration) and a test may be pointed at a GPU (``CUDA_VISIBLE_DEVICES``…).
   None of them changes what is compiled: a fetched tree is checked against its digest or
   commit, a download against the hashes written when it was published.  The variables a
   recipe names for a step (``build.secrets``, ``test[].secrets``: ``Step.secrets``) join
   them, for that step only.

:func:`compose` joins the layers; the runner starts the step with exactly that mapping.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence

from builder.errors import UsageError

__all__ = ["LOCALE", "PASS_ENV_SETTING", "RUNTIME_PASS", "STANDARD_PATH", "compose",
           "key_entries", "pass_names", "runtime_names", "snapshot", "variant_env"]

#: the system's standard program folders, after the resolved tools' folders
STANDARD_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
#: one locale for every step: compiler messages and sorted file lists do not change with
#: the user's language (C.UTF-8 is in glibc itself: no locale package needed)
LOCALE = "C.UTF-8"
#: the host or CI setting that names pass-through variables, comma separated
PASS_ENV_SETTING = "BUILDER_PASS_ENV"

#: step kind → the host variables (names or ``fnmatch`` patterns) it gets at run time,
#: unkeyed, never in the plan (their values may be credentials)
RUNTIME_PASS: dict[str, tuple[str, ...]] = {
    "fetch": ("HOME", "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY",
              "NO_PROXY", "ALL_PROXY", "all_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR",
              "GIT_SSH_COMMAND", "SSH_AUTH_SOCK", "GIT_ASKPASS"),
    "download": ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                 "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
                 "CONAN_LOGIN_USERNAME*", "CONAN_PASSWORD*"),
    # `builder build --dist`: sccache's client configuration (it holds the scheduler's
    # token: a file, never a value here), this build's own sccache server and the pool the
    # memory launcher admits remote jobs against (builder.pool.client sets them, and
    # clears them without --dist)
    "build": ("SCCACHE_CONF", "SCCACHE_SERVER_PORT", "BUILDER_DIST_POOL"),
    # which device a test runs on: the GPU machine's scheduler or the user chooses it
    "test": ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "HIP_VISIBLE_DEVICES",
             "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "NVIDIA_VISIBLE_DEVICES",
             "NVIDIA_DRIVER_CAPABILITIES"),
}

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: what the compile key records a pass-through value under (never a recipe's ``${env.X}``)
_KEY_PREFIX = "--env "


def pass_names(cli: Sequence[str], setting: str) -> tuple[str, ...]:
    """The pass-through names: ``--env`` on the command line plus the comma-separated
    ``BUILDER_PASS_ENV`` setting, each checked (a name, not a credential, not one builder
    sets itself), in a fixed order."""
    from builder.util.secrets import credential_names

    raw = [*cli, *(n.strip() for n in setting.split(",") if n.strip())]
    for name in raw:
        where = f"--env {name}" if name in cli else f"{PASS_ENV_SETTING}={setting}"
        if not _NAME.match(name):
            raise UsageError(f"{where}: '{name}' is not an environment variable name; "
                             "give a name such as CXXFLAGS (its value is read from the "
                             "environment)")
        if credential_names([name]):
            raise UsageError(f"{where}: {name} is a credential; a passed-through value is "
                             "written into the plan and the key. Conan reads its login "
                             "variables itself in the download steps that need them")
        if name in _FIXED:
            raise UsageError(f"{where}: {name} is set by builder for every step "
                             f"({_FIXED[name]}); it cannot be passed through")
    return tuple(sorted(set(raw)))


_FIXED = {"PATH": "the resolved tools' folders", "HOME": "a folder in the workspace",
          "CUDAHOSTCXX": "the resolved C++ compiler",
          "TMPDIR": "a folder in the workspace", "LC_ALL": LOCALE, "LANG": LOCALE,
          "BUILDER_OWNER": "the state folder"}


def snapshot(names: Iterable[str], environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The values of the pass-through ``names`` that are set (an unset one is not passed,
    so that it leaves the key as if it had never been named)."""
    return tuple((n, environ[n]) for n in sorted(set(names)) if n in environ)


def key_entries(passed: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """The pass-through values as compile key entries, apart from the ``${env.X}`` ones."""
    return tuple((_KEY_PREFIX + n, v) for n, v in passed)


def variant_env(*, tool_paths: Iterable[str], state: str, own_pythonpath: str = "",
                cxx: str = "",
                options_env: Iterable[tuple[str, str]] = (),
                passed: Iterable[tuple[str, str]] = ()) -> tuple[tuple[str, str], ...]:
    """The base environment of every step of a variant (pure: the resolver's values in,
    sorted pairs out).  ``tool_paths``: the executables the plan resolved (their folders
    make ``PATH``, first one first); ``state``: builder's state folder (``HOME`` and
    ``TMPDIR`` go there); ``own_pythonpath``: where builder itself is imported from when
    that is not its interpreter's own packages; ``cxx``: the resolved C++ compiler, which
    is CUDA's host compiler too (``CUDAHOSTCXX``, read by CMake); ``options_env``:
    (variable, value) of the options that name a variable; ``passed``: the pass-through
    values."""
    folders: list[str] = []
    for p in tool_paths:
        d = p.rpartition("/")[0] if "/" in p else ""
        if d and d not in folders:
            folders.append(d)
    folders += [d for d in STANDARD_PATH if d not in folders]
    env = {"PATH": ":".join(folders), "HOME": f"{state}/home", "TMPDIR": f"{state}/tmp",
           "LC_ALL": LOCALE, "LANG": LOCALE}
    if own_pythonpath:
        env["PYTHONPATH"] = own_pythonpath
    if cxx:
        env["CUDAHOSTCXX"] = cxx
    env.update(options_env)
    env.update(passed)
    return tuple(sorted(env.items()))


def runtime_names(kind: str, environ: Mapping[str, str]) -> list[str]:
    """The host variables a step of ``kind`` gets at run time (:data:`RUNTIME_PASS`)."""
    pats = RUNTIME_PASS.get(kind, ())
    return sorted(n for n in environ if any(fnmatch.fnmatchcase(n, p) for p in pats))


def compose(base: Iterable[tuple[str, str]], changes: Mapping[str, str], kind: str,
            environ: Mapping[str, str], secrets: Iterable[str] = ()) -> dict[str, str]:
    """A step's whole environment: the variant's ``base``, the step's ``changes``, what
    its ``kind`` takes from the host's ``environ`` at run time and the ``secrets`` the
    recipe names for it (:mod:`builder.resolve.secretenv`) — nothing else."""
    env = dict(base)
    env.update(changes)
    env.update({n: environ[n] for n in runtime_names(kind, environ)})
    env.update({n: environ[n] for n in secrets if n in environ})
    return env
