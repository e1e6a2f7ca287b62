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
from collections.abc import Iterable
from typing import Any

from .backends import data_table
from .host import HostFacts
from .model import ConanRequirement, Recipe


def table() -> dict[str, Any]:
    t: dict[str, Any] = data_table("system_packages.json")["debian"]
    return t


def upstream_version(debian_version: str) -> str:
    """``1:3.21.12-3+deb12u1`` → ``3.21.12``."""
    v = debian_version.split(":", 1)[-1]
    v = v.rsplit("-", 1)[0] if "-" in v else v
    return re.split(r"[+~]", v, maxsplit=1)[0]


def needed_packages(recipes: Iterable[Recipe]) -> tuple[str, ...]:
    names: set[str] = set()
    for r in recipes:
        for c in r.requires.conan:
            entry = table().get(c.name)
            if c.provider == "system" and entry:
                names.update(entry["packages"])
        for s in r.requires.system:
            names.update(s.packages)
    return tuple(sorted(names))


def conan_problem(req: ConanRequirement, host: HostFacts) -> tuple[str, str] | None:
    """Why the system cannot provide ``req`` (None when it can)."""
    entry = table().get(req.name)
    if entry is None:
        return (f"{req.ref}: no system package is known for {req.name}",
                f"use `provider: remote` for it, or add {req.name} to "
                f"builder/data/system_packages.json")
    installed = dict(host.system_packages)
    missing = [p for p in entry["packages"] if p not in installed]
    if missing:
        return (f"{req.ref}: system package(s) {', '.join(missing)} not installed",
                f"apt-get install {' '.join(entry['packages'])}")
    have = upstream_version(installed[entry["version_of"]])
    if have != req.version and not have.startswith(req.version + "."):
        return (f"{req.ref}: the system has {req.name} {have} "
                f"({entry['version_of']} {installed[entry['version_of']]})",
                f"require {req.name}/{have}, or use `provider: remote` for {req.version}")
    return None


def missing_system(packages: Iterable[str], host: HostFacts) -> list[str]:
    installed = dict(host.system_packages)
    return [p for p in packages if p not in installed]
