"""The ``${name}`` substitution used in defines, flags, tests and install paths.

It is deliberately not a template language: a variable is replaced by its value,
nothing else happens.  ``$${`` writes a literal ``${``.  The variables are:

=====================  ===============================================================
``package.name``       the recipe's name
``package.version``    the recipe's version
``backend``            cpu, cuda, rocm or metal
``build_type``         release, debug or relwithdebinfo
``archs``              the variant's GPU archs as written, ``;``-separated (``sm_80;sm_90``)
``archs.cmake``        the same in CMake's form (``80;90``, ``gfx1030``)
``options.NAME``       an option's value (bools: ``ON``/``OFF``; lists: ``;``-joined)
``python``             the target Python interpreter (absolute path)
``python.version``     its version, ``3.11``
``source``             the source root
``build``              the CMake build folder
``prefix``             the install prefix of the variant
``device``             the test device for the backend (see ``test[].devices``)
``kernel``, ``arch``, ``ext``   in ``install.layout`` only
``env.NAME``           an environment variable (empty when unset)
=====================  ===============================================================
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["KNOWN", "PREFIXES", "SubstitutionError", "is_known", "substitute", "variables"]

_VAR = re.compile(r"\$(\$?)\{([^}]*)\}")

KNOWN = frozenset({
    "package.name", "package.version", "backend", "build_type", "archs", "archs.cmake",
    "python", "python.version", "source", "build", "prefix", "device", "kernel", "arch", "ext",
})
PREFIXES = ("options.", "env.")


class SubstitutionError(ValueError):
    """A ``${...}`` names an unknown variable."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(name)


def variables(text: str) -> list[str]:
    """The variable names used in ``text`` (escaped ``$${`` excluded)."""
    return [m.group(2) for m in _VAR.finditer(text) if not m.group(1)]


def is_known(name: str) -> bool:
    return name in KNOWN or any(name.startswith(p) and len(name) > len(p) for p in PREFIXES)


def substitute(text: str, values: Mapping[str, str]) -> str:
    """Replace every ``${name}`` in ``text``; an unknown name raises."""

    def repl(m: re.Match[str]) -> str:
        if m.group(1):
            return "${" + m.group(2) + "}"
        name = m.group(2)
        if name in values:
            return values[name]
        if name.startswith("env."):
            return ""
        raise SubstitutionError(name)

    return _VAR.sub(repl, text)
