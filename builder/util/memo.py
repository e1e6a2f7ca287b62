"""Memoising a pure function of one immutable object by the object's identity.

A recipe is a frozen dataclass: what is derived from it alone (its model digest, the
texts it substitutes, the environment variables it reads) is the same for each of its
variants.  Computing it once per recipe instead of once per variant keeps planning linear
in the number of variants: a recipe of N backends has N variants, and a digest of the
whole recipe per variant made the plan quadratic.  Keyed by identity (hashing a
dataclass walks every field, which is the cost being saved); the entry holds the object,
so that an id is never reused while its entry lives; bounded, oldest out first."""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

__all__ = ["per_object"]

A = TypeVar("A")
R = TypeVar("R")

#: objects remembered per function: more than the recipes of any one plan
SIZE = 4096


def per_object(fn: Callable[[A], R]) -> Callable[[A], R]:
    """``fn`` (pure, of one immutable argument) remembered per argument object."""
    seen: OrderedDict[int, tuple[A, R]] = OrderedDict()

    @functools.wraps(fn)
    def wrapper(obj: A) -> R:
        hit = seen.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        value = fn(obj)
        seen[id(obj)] = (obj, value)
        if len(seen) > SIZE:
            seen.popitem(last=False)
        return value

    return wrapper
