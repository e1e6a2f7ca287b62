"""builder's data files: toolchain tables (``*.json``), the recipe JSON Schema and the
templates of generated files (``templates/``).  Read them through these functions only."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["data_table", "text"]


def text(*parts: str) -> str:
    """The text of a resource file, e.g. ``text("templates", "profile.tmpl")``."""
    return resources.files(__name__).joinpath(*parts).read_text(encoding="utf-8")


@cache
def data_table(name: str) -> Any:
    """A JSON table such as ``cuda.json`` (cached: the files never change at run time)."""
    return json.loads(text(name))
