"""Checks of the shape of JSON values read back from files: each returns the value typed,
or raises :class:`ShapeError` naming the JSON path of the first problem."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["ShapeError", "boolean", "get", "integer", "list_of", "number", "obj", "optional",
           "string"]

T = TypeVar("T")


class ShapeError(ValueError):
    """A JSON value is not of the expected shape; ``where`` is its path (``jobs.ab12``)."""

    def __init__(self, where: str, message: str) -> None:
        self.where = where
        super().__init__(f"{where or 'the top level'}: {message}" if where else message)


# -- shape checks -------------------------------------------------------------------------

def _kind(v: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(type(v), "a value")


def obj(v: Any, where: str = "") -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ShapeError(where, f"expected an object, got {_kind(v)}")
    return v


def list_of(v: Any, where: str = "") -> list[Any]:
    if not isinstance(v, list):
        raise ShapeError(where, f"expected a list, got {_kind(v)}")
    return v


def string(v: Any, where: str = "") -> str:
    if not isinstance(v, str):
        raise ShapeError(where, f"expected a string, got {_kind(v)}")
    if "\0" in v:
        raise ShapeError(where, "contains a NUL character")
    return v


def number(v: Any, where: str = "", lo: float = 0.0, hi: float = 1e300) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ShapeError(where, f"expected a finite number, got {_kind(v)}")
    if not lo <= v <= hi:
        raise ShapeError(where, f"{v} is out of range [{lo:g}, {hi:g}]")
    return float(v)


def integer(v: Any, where: str = "", lo: int = 0, hi: int = 2**62) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ShapeError(where, f"expected an integer, got {_kind(v)}")
    if not lo <= v <= hi:
        raise ShapeError(where, f"{v} is out of range [{lo}, {hi}]")
    return v


def boolean(v: Any, where: str = "") -> bool:
    if not isinstance(v, bool):
        raise ShapeError(where, f"expected true or false, got {_kind(v)}")
    return v


def get(d: dict[str, Any], key: str, check: Callable[[Any, str], T], where: str = "",
        default: T | None = None) -> T:
    """``d[key]`` checked by ``check``; a missing key is ``default`` (or an error when
    ``default`` is None)."""
    path = f"{where}.{key}" if where else key
    if key not in d:
        if default is None:
            raise ShapeError(path, "missing")
        return default
    return check(d[key], path)


def optional(d: dict[str, Any], key: str, check: Callable[[Any, str], Any], where: str) -> None:
    """An optional field: checked when present (null allowed)."""
    if d.get(key) is not None:
        check(d[key], f"{where}.{key}")
