"""Third-party requirements satisfied by the distribution's packages.

The ``system`` provider maps a Conan reference (``protobuf/3.21.12``) to the
Debian packages that provide it (``data/system_packages.json``); the generated
profile lists it under ``[platform_requires]`` so Conan uses what is installed and
the project's ``find_package`` finds the system's config files.  Before anything
runs, builder checks the packages are installed and that their version matches
the reference, and otherwise says which ``apt-get install`` fixes it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from builder.host.facts import HostFacts
from builder.recipe.model import ConanRequirement, Recipe
from builder.resources import data_table

__all__ = ["conan_problem", "cross_problem", "install_command", "missing_system",
           "needed_packages", "packages_for", "platform_ref", "qualified", "table",
           "upstream_version", "version_matches"]


def table() -> dict[str, Any]:
    t: dict[str, Any] = data_table("system_packages.json")["debian"]
    return t


def upstream_version(debian_version: str) -> str:
    """``1:3.21.12-3+deb12u1`` → ``3.21.12``."""
    v = debian_version.split(":", 1)[-1]
    v = v.rsplit("-", 1)[0] if "-" in v else v
    return re.split(r"[+~]", v, maxsplit=1)[0]


def qualified(package: str, multiarch: str) -> str:
    """A package name for the target's architecture: ``libprotobuf-dev:arm64`` when cross
    compiling for a Debian multiarch architecture, else the name itself."""
    return f"{package}:{multiarch}" if multiarch else package


def packages_for(entry: dict[str, Any], multiarch: str = "") -> list[str]:
    """The packages of a table entry for a build whose target libraries are of Debian
    architecture ``multiarch`` ("" = the host's): tools (``build_packages``, such as
    protoc) run on the build machine and stay the host's; libraries are the target's."""
    tools = set(entry.get("build_packages", ()))
    return [p if p in tools else qualified(p, multiarch) for p in entry["packages"]]


def needed_packages(recipes: Iterable[Recipe]) -> tuple[str, ...]:
    from builder.backends.platforms import get as get_target

    names: set[str] = set()
    for r in recipes:
        arches = {tc.multiarch for b in r.backends if b.target
                  for t in [get_target(b.target)] if t for _, tc in t.cross if tc.multiarch}
        for ma in ("", *sorted(arches)):
            for c in r.requires.conan:
                entry = table().get(c.name)
                if c.provider == "system" and entry:
                    names.update(packages_for(entry, ma))
            for s in r.requires.system:
                names.update(qualified(p, ma) for p in s.packages)
    return tuple(sorted(names))


def install_command(packages: Iterable[str], multiarch: str = "") -> str:
    """``apt-get install …``, after enabling the foreign architecture when one is needed."""
    cmd = f"apt-get install {' '.join(packages)}"
    return f"dpkg --add-architecture {multiarch} && apt-get update && {cmd}" if multiarch \
        else cmd


def conan_problem(req: ConanRequirement, host: HostFacts,
                  multiarch: str = "") -> tuple[str, str] | None:
    """Why the system cannot provide ``req`` (None when it can); ``multiarch``: the Debian
    architecture of a cross build's target (its libraries are ``name:arch`` packages)."""
    entry = table().get(req.name)
    if entry is None:
        return (f"{req.ref}: no system package is known for {req.name}",
                f"use `provider: remote` for it, or add {req.name} to "
                f"builder/resources/system_packages.json")
    installed = dict(host.system_packages)
    wanted = packages_for(entry, multiarch)
    missing = [p for p in wanted if p not in installed]
    if missing:
        return (f"{req.ref}: system package(s) {', '.join(missing)} not installed",
                install_command(wanted, multiarch if any(":" in p for p in missing) else ""))
    version_of = packages_for({"packages": [entry["version_of"]],
                               "build_packages": entry.get("build_packages", ())},
                              multiarch)[0]
    have = upstream_version(installed[version_of])
    try:
        ok = version_matches(have, req.version)
    except ValueError as exc:
        return (f"{req.ref}: {exc}", "write a range like [>=1.12 <2] (Conan's syntax)")
    if not ok:
        return (f"{req.ref}: the system has {req.name} {have} "
                f"({version_of} {installed[version_of]})",
                f"require {req.name}/{have} (or a range that admits it, e.g. "
                f"{req.name}/[>={have.rsplit('.', 1)[0]}]), or use `provider: remote` "
                f"for {req.version}")
    return None


def _vtuple(text: str) -> tuple[int, ...]:
    parts = re.findall(r"\d+", text)
    if not parts:
        raise ValueError(f"not a version: {text!r}")
    return tuple(int(x) for x in parts)


def _cmp(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = max(len(a), len(b))
    pa, pb = a + (0,) * (n - len(a)), b + (0,) * (n - len(b))
    return (pa > pb) - (pa < pb)


def _condition(have: tuple[int, ...], cond: str) -> bool:
    for op in (">=", "<=", ">", "<", "==", "=", "~", "^"):
        if cond.startswith(op):
            v = _vtuple(cond[len(op):])
            break
    else:
        op, v = "=", _vtuple(cond)
    c = _cmp(have, v)
    if op in ("~", "^"):  # ~1.2 and ~1.2.3: 1.2.x; ~1: 1.x; ^1.2: 1.x (at least 1.2)
        keep = min(len(v), 2) if op == "~" else 1
        return c >= 0 and have[:keep] == v[:keep]
    return {">=": c >= 0, "<=": c <= 0, ">": c > 0, "<": c < 0}.get(op, c == 0 if len(
        v) >= len(have) else have[:len(v)] == v)


def version_matches(have: str, wanted: str) -> bool:
    """Whether the system's upstream version ``have`` satisfies a reference's version:
    exact (``1.12.1``; ``1.12`` admits 1.12.x) or a Conan range (``[>=1.12 <2]``, with
    ``||`` alternatives and ``~``/``^``).  Raises ValueError for an unreadable range."""
    h = _vtuple(have)
    if not wanted.startswith("["):
        return have == wanted or have.startswith(wanted + ".")
    body = wanted.strip("[]")
    for alternative in body.split("||"):
        conds = [c for c in re.split(r"[\s,]+", alternative.strip())
                 if c and c not in ("include_prerelease", "loose")]
        if conds and all(_condition(h, c) for c in conds):
            return True
    return False


def platform_ref(req: ConanRequirement, host: HostFacts, multiarch: str = "") -> str:
    """The reference written to the profile's [platform_requires]: the recipe's, or — for a
    version range — the version the system really provides (Conan matches it to the range)."""
    if not req.version.startswith("["):
        return req.ref
    entry = table().get(req.name, {})
    version_of = packages_for({"packages": [entry.get("version_of", "")],
                               "build_packages": entry.get("build_packages", ())},
                              multiarch)[0]
    have = dict(host.system_packages).get(version_of, "")
    return f"{req.name}/{upstream_version(have)}" if have else req.ref


def missing_system(packages: Iterable[str], host: HostFacts) -> list[str]:
    installed = dict(host.system_packages)
    return [p for p in packages if p not in installed]


def cross_problem(reqs: Sequence[ConanRequirement], system: Sequence[str], host: HostFacts,
                  multiarch: str, target: str = "", whys: Sequence[str] = ()
                  ) -> tuple[str, str] | None:
    """All the packages a build lacks — the target architecture's (``multiarch``) when cross
    compiling for ``target`` — as one problem whose fix installs every one of them (rather
    than one reference at a time); ``whys``: what the recipe's missing system packages are
    for."""
    missing: list[str] = []
    refs: list[str] = []
    for req in reqs:
        entry = table().get(req.name)
        if entry is None:
            continue  # conan_problem names it
        gone = missing_system(packages_for(entry, multiarch), host)
        if gone:
            refs.append(req.ref)
            missing += [p for p in gone if p not in missing]
    gone = missing_system([qualified(p, multiarch) for p in system], host)
    missing += [p for p in gone if p not in missing]
    if not missing:
        return None
    why = f" ({', '.join([*refs, *whys])})" if refs or whys else ""
    for_target = f" for {target}" if target else ""
    return (f"system package(s) {', '.join(missing)}{for_target} not installed{why}",
            install_command(missing, multiarch if any(":" in p for p in missing) else ""))
