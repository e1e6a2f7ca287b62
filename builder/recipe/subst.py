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
``env.NAME``           an environment variable; unset, it is an error naming the
                       recipe's line, unless a default is written: ``${env.NAME:-text}``
                       (``text`` is used when the variable is unset or empty, as in a
                       shell; it cannot hold ``}``)
=====================  ===============================================================

Where substitution happens is said once, in the JSON Schema: a property marked
``"x-substitute": "compile"`` (or ``"test"``) has every string below it substituted.
:func:`interpolated` walks a recipe document with that schema and lists each such text
with its place; the loader keeps the list on the model, and the keys
(:mod:`builder.resolve.keyinputs`) and the values substitution may use are both derived
from it — so a field cannot be substituted without its variables being keyed: an
``${env.X}`` outside the listed texts has no value and fails the plan.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["KNOWN", "PREFIXES", "SCOPES", "Interpolated", "SubstitutionError", "env_default",
           "interpolated", "is_known", "substitute", "variables"]

#: the keyword that marks a schema property as substituted, and its values: ``compile``
#: texts enter the compile key, ``test`` texts (only the tests read them) the variant key
KEYWORD = "x-substitute"
SCOPES = ("compile", "test")
_DEFAULT = ":-"

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


def env_default(name: str) -> tuple[str, str | None]:
    """``env.NAME:-text`` → (``env.NAME``, ``text``); any other name → (name, None)."""
    if name.startswith("env.") and _DEFAULT in name:
        base, _, default = name.partition(_DEFAULT)
        return base, default
    return name, None


def is_known(name: str) -> bool:
    name, _ = env_default(name)
    if _DEFAULT in name:  # a default is for environment variables only
        return False
    return name in KNOWN or any(name.startswith(p) and len(name) > len(p) for p in PREFIXES)


def substitute(text: str, values: Mapping[str, str]) -> str:
    """Replace every ``${name}`` in ``text``; an unknown name raises."""

    def repl(m: re.Match[str]) -> str:
        if m.group(1):
            return "${" + m.group(2) + "}"
        name, default = env_default(m.group(2))
        value = values.get(name)
        if default is not None and not value:
            return default
        if value is None:
            raise SubstitutionError(name)
        return value

    return _VAR.sub(repl, text)


@dataclass(frozen=True)
class Interpolated:
    """A text of a recipe that is substituted: where it is, and which key it enters."""

    path: tuple[str | int, ...]
    text: str
    scope: str  # "compile" or "test"


def interpolated(schema: Mapping[str, Any], data: Any) -> list[Interpolated]:
    """Every substituted text of the recipe document ``data``: the strings below each
    schema property marked with :data:`KEYWORD`, in document order."""
    out: list[Interpolated] = []
    _walk(schema, schema, data, (), "", out)
    return out


def _strings(data: Any, path: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...],
                                                                        str]]:
    if isinstance(data, str):
        yield path, data
    elif isinstance(data, dict):
        for k, v in data.items():
            yield from _strings(v, (*path, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _strings(v, (*path, i))


def _walk(node: Any, root: Mapping[str, Any], data: Any, path: tuple[str | int, ...],
          scope: str, out: list[Interpolated]) -> None:
    if not isinstance(node, Mapping):
        return
    while "$ref" in node:
        node = {**root["$defs"][node["$ref"].rsplit("/", 1)[-1]],
                **{k: v for k, v in node.items() if k != "$ref"}}
    scope = node.get(KEYWORD, scope)
    if scope:
        out.extend(Interpolated(p, t, scope) for p, t in _strings(data, path))
        return
    if isinstance(data, dict):
        props = node.get("properties", {})
        extra = node.get("additionalProperties")
        for k, v in data.items():
            sub = props.get(k, extra if isinstance(extra, Mapping) else None)
            _walk(sub, root, v, (*path, k), scope, out)
    elif isinstance(data, list) and isinstance(node.get("items"), Mapping):
        for i, v in enumerate(data):
            _walk(node["items"], root, v, (*path, i), scope, out)
