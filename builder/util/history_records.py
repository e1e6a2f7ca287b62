"""memory-history.json, checked: each measured compile against what builder writes.

A damaged record is left out with a note and the rest are kept (each is one file's
measurement, measured again by the next build); only a file whose top level is not
builder's shape is set aside whole (:func:`builder.util.records.own`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from builder.util.records import own
from builder.util.shapes import (
    ShapeError,
    boolean,
    get,
    integer,
    list_of,
    number,
    obj,
    optional,
    string,
)

__all__ = ["parse_history", "parse_history_record", "read_history"]

#: paths whose damaged records were reported (once per path and process)
_reported: set[str] = set()


#: the most points a memory curve may have (``launcher.curve_of`` writes a few dozen)
_CURVE_MAX = 1000
#: the largest peak a compile can have measured (1 PiB): more is a damaged record
_PEAK_MAX = 2**50


def _shares(v: Any, where: str) -> list[float]:
    """A memory curve: shares of the peak, each in [0, 1]."""
    points = list_of(v, where)
    if len(points) > _CURVE_MAX:
        raise ShapeError(where, f"{len(points)} points (at most {_CURVE_MAX})")
    return [number(x, f"{where}[{i}]", 0.0, 1.0) for i, x in enumerate(points)]


def parse_history_record(rec: Any, where: str) -> dict[str, Any]:
    """One measured compile, checked against what builder writes: a file name, a peak
    of 0 … 1 PiB, non-negative times and counts, curves of shares in [0, 1] (what the
    estimates and the admission policy index and divide by)."""
    # null stands for a field not written: left out, so that ``rec.get(f, default)`` holds
    r = {k: v for k, v in obj(rec, where).items() if v is not None}
    if not get(r, "file", string, where):
        raise ShapeError(f"{where}.file", "empty")
    get(r, "peak", lambda x, w: integer(x, w, 0, _PEAK_MAX), where)
    for f in ("seconds", "cpu", "when"):
        optional(r, f, number, where)
    optional(r, "runs", lambda x, w: integer(x, w, 1), where)
    optional(r, "prev_peak", lambda x, w: integer(x, w, 0, _PEAK_MAX), where)
    optional(r, "oom", boolean, where)
    optional(r, "curve", _shares, where)
    optional(r, "prev_curve", _shares, where)
    optional(r, "cpus", lambda x, w: [number(c, f"{w}[{i}]") for i, c in
                                  enumerate(list_of(x, w))], where)
    return r


def parse_history(data: Any, dropped: list[str] | None = None
                  ) -> dict[str, dict[str, Any]]:
    """The measured compiles; a record that fails :func:`parse_history_record` is left
    out and why appended to ``dropped`` (the rest stay: each is one file's measurement,
    measured again by the next build).  Only a file whose top level is not builder's
    shape is set aside whole."""
    d = obj(data)
    jobs = obj(d.get("jobs", {}), "jobs")
    out: dict[str, dict[str, Any]] = {}
    for key, rec in jobs.items():
        try:
            out[key] = parse_history_record(rec, f"jobs.{key}")
        except ShapeError as exc:
            if dropped is not None:
                dropped.append(str(exc))
    return out


def read_history(path: Path) -> dict[str, dict[str, Any]]:
    """The history's good records; damaged ones are left out with a note (once per path)."""
    dropped: list[str] = []

    def parse(data: Any) -> dict[str, dict[str, Any]]:
        return parse_history(data, dropped)

    jobs: dict[str, dict[str, Any]] = own(path, parse, dict)
    if dropped and str(path) not in _reported:
        _reported.add(str(path))
        print(f"note: {path}: left out {len(dropped)} damaged record(s) ({dropped[0]}"
              f"{'; …' if len(dropped) > 1 else ''}); those files are measured again by the "
              f"next build", file=sys.stderr, flush=True)
    return jobs


