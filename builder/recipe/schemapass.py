"""The recipe files known to pass the JSON Schema, so that planning an unchanged project
neither imports :mod:`jsonschema` (about a sixth of ``builder plan``'s start-up) nor runs
it again.

Only the schema pass is remembered, never a recipe: the YAML is parsed, the semantic
checks (which look at the file system: kernel sources, project root) run and the model
is built every time.  An entry is the sha256 of a file's bytes; the file as a whole is
keyed by the environment that decides the schema's verdict on those bytes: the schema's
text, builder's version, and the identity (size, mtime, inode) of the modules that parse
and validate (``yamlload``, ``validate``, PyYAML, jsonschema).  Any change there starts an
empty cache.  It is written atomically; a damaged one is set aside and ignored.
"""

from __future__ import annotations

import hashlib
import os
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["SchemaPasses", "environment_key", "parse_schema_passes"]

#: entries kept at most (a file is a few kB even then)
MAX_ENTRIES = 4096


def _identity(path: str | None) -> str:
    if not path:
        return "none"
    try:
        st = os.stat(path)
    except OSError:
        return "missing"
    return f"{path}:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


@cache
def environment_key() -> str:
    """What the schema's verdict on a file's bytes depends on, besides the bytes."""
    from importlib.util import find_spec

    import yaml

    import builder
    from builder.resources import text

    spec = find_spec("jsonschema")  # located, not imported
    here = Path(__file__).parent
    parts = [builder.__version__, hashlib.sha256(text("recipe.schema.json").encode())
             .hexdigest(), _identity(str(here / "validate.py")),
             _identity(str(here / "yamlload.py")),
             _identity(yaml.__file__), getattr(yaml, "__version__", ""),
             _identity(spec.origin if spec else None)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def parse_schema_passes(data: Any) -> tuple[str, frozenset[str]]:
    """``schema-passes.json``: ``{"version": 1, "environment": key, "passed": [sha256…]}``."""
    from builder.util.shapes import ShapeError, get, integer, list_of, obj, string

    d = obj(data)
    if get(d, "version", integer) != 1:
        raise ShapeError("version", "unknown version")
    passed = frozenset(string(x, "passed") for x in get(d, "passed", list_of))
    if any(len(x) != 64 for x in passed):
        raise ShapeError("passed", "not a sha256")
    return get(d, "environment", string), passed


class SchemaPasses:
    """The content digests that passed the schema in this environment (empty when
    ``path`` is None: nothing is remembered)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.passed: set[str] = set()
        self.added = False
        if path is not None:
            from builder.util import records

            env, passed = records.own(path, parse_schema_passes, lambda: ("", frozenset()))
            if env == environment_key():
                self.passed = set(passed)

    def __contains__(self, digest: str) -> bool:
        return digest in self.passed

    def add(self, digest: str) -> None:
        if self.path is not None and digest not in self.passed:
            self.passed.add(digest)
            self.added = True

    def save(self) -> None:
        """Written only when something was added and the state folder exists (a plan
        never creates it for a cache)."""
        if not self.added or self.path is None or not self.path.parent.is_dir():
            return
        from builder.util.records import write_json

        kept = sorted(self.passed)[-MAX_ENTRIES:]
        write_json(self.path, {"version": 1, "environment": environment_key(),
                               "passed": kept})
        self.added = False
