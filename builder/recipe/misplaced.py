"""A key indented one level too deep under ``backends:`` (``defines:`` under it reads as
a backend named defines): found by name, said once as what it is with both fixes, and
the errors inside it left out (the key is the problem, not what it holds)."""

from __future__ import annotations

import functools
import json
from typing import Any

from builder.recipe.diags import Diags
from builder.recipe.yamlload import PathKey
from builder.resources import text as resource_text

__all__ = ["inside_misplaced", "misplaced", "misplaced_keys"]


@functools.cache
def misplaced_keys() -> frozenset[str]:
    """Keys of a recipe or of a backend: under ``backends:`` without a ``kind``, one of
    these is a mis-indented key, not a backend's name."""
    schema = json.loads(resource_text("recipe.schema.json"))
    backend = schema.get("$defs", {}).get("backend", {}).get("properties", {})
    return frozenset(schema.get("properties", {})) | frozenset(backend) - {"kind"}


def _is_misplaced(name: object, spec: object) -> bool:
    return name in misplaced_keys() and not (isinstance(spec, dict) and "kind" in spec)


def misplaced(data: dict[str, Any], d: Diags) -> None:
    """Each mis-indented key under ``backends:``, located, with both fixes."""
    backends = data.get("backends")
    if not isinstance(backends, dict):
        return
    from builder import backends as registry

    first = registry.names()[0]
    for name, spec in backends.items():
        if _is_misplaced(name, spec):
            d.add(("backends", name), f"`{name}:` is indented under `backends:`, so it "
                  f"reads as a backend named '{name}'", f"move `{name}:` left to the top "
                  f"level (for every backend), or indent it under one backend such as "
                  f"`{first}:` (for that backend only)", key=True)


def inside_misplaced(path: PathKey, data: dict[str, Any]) -> bool:
    """Whether ``path`` (of a schema error) lies inside a mis-indented key."""
    if len(path) < 2 or path[0] != "backends":
        return False
    backends = data.get("backends")
    return isinstance(backends, dict) and _is_misplaced(path[1], backends.get(path[1]))
