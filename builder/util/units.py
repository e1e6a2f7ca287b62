"""Sizes and durations as people write them, read in one place with one set of hints.

Sizes (``--memory-budget``, ``cache prune --max-size``, a recipe's ``memory.default`` and
``memory.per_file``): a number and a unit, with or without a space, in any case.
``KiB``/``MiB``/``GiB``/``TiB`` are powers of 1024 and ``KB``/``MB``/``GB``/``TB``
powers of 1000; a bare ``K``/``M``/``G``/``T`` (or ``Ki``…``Ti``) is the power of 1024
(as in ``sort -S``, ``ulimit`` and docker).  ``0`` needs no unit.  Durations (``cache
prune --older-than``): a number and ``s``, ``m``/``min``, ``h``, ``d`` or ``w``.  Anything
else is a ValueError whose text says what was expected, with an example."""

from __future__ import annotations

import re

__all__ = ["MAX_SIZE", "parse_duration", "parse_size"]

#: the largest size builder accepts anywhere (1 EiB)
MAX_SIZE = 2**60

_SIZE_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
               **{f"{p}{i}": 2**(10 * n) for n, p in enumerate("kmgt", 1)
                  for i in ("", "i", "ib")}}
_SIZE = re.compile(r"\s*(\d{1,15}(?:\.\d{1,9})?)\s*([A-Za-z]*)\s*")
_SIZE_EXAMPLE = "give a number and a unit, e.g. 6GiB, 800MiB, 1.5GB or 6G"

_DURATION_UNITS = {"s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "m": 60,
                   "min": 60, "mins": 60, "minute": 60, "minutes": 60, "h": 3600,
                   "hour": 3600, "hours": 3600, "d": 86400, "day": 86400, "days": 86400,
                   "w": 7 * 86400, "week": 7 * 86400, "weeks": 7 * 86400}
_DURATION = re.compile(r"\s*(\d{1,12}(?:\.\d{1,9})?)\s*([A-Za-z]*)\s*")


def parse_size(text: str) -> int:
    """``6GiB``, ``6 GB``, ``6g``, ``800MiB``, ``0`` → bytes.  Raises ValueError with a
    hint (no sign, exponent, inf or nan; at most 1 EiB)."""
    m = _SIZE.fullmatch(text)
    if not m:
        raise ValueError(f"not a size: {text!r} ({_SIZE_EXAMPLE})")
    number, unit = m.group(1), m.group(2).lower()
    if not unit:
        if float(number) == 0:
            return 0
        raise ValueError(f"{text!r} has no unit ({_SIZE_EXAMPLE}; a bare number would be "
                         f"bytes: write {number}B if you mean that)")
    if unit not in _SIZE_UNITS:
        raise ValueError(f"unknown size unit {m.group(2)!r} in {text!r} (units: B, KiB, MiB, "
                         f"GiB, TiB, KB, MB, GB, TB, K, M, G, T)")
    value = int(float(number) * _SIZE_UNITS[unit])
    if value > MAX_SIZE:
        raise ValueError(f"size too large: {text!r} (at most 1 EiB)")
    return value


def parse_duration(text: str) -> float:
    """``30d``, ``12h``, ``90m``, ``10min``, ``2w``, ``45s`` → seconds.  Raises
    ValueError with a hint."""
    m = _DURATION.fullmatch(text)
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _DURATION_UNITS:
        why = "has no unit" if m and not unit else "is not a duration"
        raise ValueError(f"{text!r} {why} (give a number and s, m, h, d or w, e.g. 30d, 12h, "
                         f"10min)")
    return float(m.group(1)) * _DURATION_UNITS[unit]
