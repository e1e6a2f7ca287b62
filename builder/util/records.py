"""Every file builder reads back, through one reader per kind that checks encoding and
shape before anything uses it.

Two kinds of files:

* **builder's own caches and records** in the state folder (host probes, memory history,
  step times, the last build, the kernel-tree registry, the digest cache, install
  manifests).  One that is damaged (not UTF-8, not JSON, the wrong shape) is reported
  once on stderr, set aside — renamed to ``<name>.damaged-<time>``, never deleted — and
  read as empty, so it is rebuilt by the next build.  It never stops a command.
* **files the user hands to builder** (a lockfile, a ``--host-facts`` file): a wrong one
  is :class:`~builder.errors.InputFileError` (exit 3) naming the file, what is wrong and
  the fix.

Shapes are checked by the small combinators of :mod:`builder.util.shapes` (``obj``,
``list_of``, …) that raise ``ShapeError`` with the JSON path of the first problem.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from builder.errors import FileSystemError, InputFileError
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

__all__ = ["MAX_RECORD_BYTES", "T", "own", "parse_digest_cache", "parse_host_cache",
           "parse_jobs_report", "parse_kernel_installs", "parse_kernel_record", "parse_last_build",
           "parse_lockfile", "parse_manifest", "parse_step_times", "read_digest_cache",
           "read_host_cache", "read_jobs_report", "read_json",
           "read_kernel_installs", "read_kernel_record", "read_last_build", "read_lockfile",
           "read_manifest",
           "read_step_times", "set_aside", "user", "write_digest_cache", "write_json"]

T = TypeVar("T")

#: largest file a record reader loads (a state file is a few MB at most)
MAX_RECORD_BYTES = 256 * 2**20

_reported: set[str] = set()


# -- reading ------------------------------------------------------------------------------

def read_json(path: Path) -> Any:
    """The JSON value of ``path``; raises OSError, or ValueError for bad encoding/JSON."""
    if not _is_regular(path):  # a FIFO or a device could block or never end
        os.stat(path)  # a missing file raises FileNotFoundError
        raise ValueError("not a regular file")
    with open(path, "rb") as f:
        raw = f.read(MAX_RECORD_BYTES + 1)
    if len(raw) > MAX_RECORD_BYTES:
        raise ValueError(f"larger than {MAX_RECORD_BYTES // 2**20} MiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON at line {exc.lineno} column {exc.colno}: "
                         f"{exc.msg}") from None
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _is_regular(path: Path) -> bool:
    """Never open a FIFO or a device (it could block forever)."""
    import stat

    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def set_aside(path: Path, problem: str) -> None:
    """Rename a damaged file of builder's next to itself and say so, once per path."""
    aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
    from builder.errors import OwnershipError
    from builder.util.writer import move

    try:
        move(path, aside)
        where = f"set aside as {aside.name}"
    except OSError as exc:
        where = f"could not be set aside ({exc.strerror}); it is ignored"
    except OwnershipError:
        where = "left alone (it is not in a folder builder owns); it is ignored"
    if str(path) not in _reported:
        _reported.add(str(path))
        print(f"note: {path} is damaged ({problem}); {where}, and it is rebuilt",
              file=sys.stderr, flush=True)


def own(path: Path, parse: Callable[[Any], T], empty: Callable[[], T]) -> T:
    """Read one of builder's own files: missing → ``empty()``; damaged → set aside and
    ``empty()``; an OS error (permissions) → ``empty()`` as well (it is a cache)."""
    try:
        if not path.exists() and not path.is_symlink():
            return empty()
    except OSError:
        return empty()
    if not _is_regular(path):
        set_aside(path, "not a regular file")
        return empty()
    try:
        data = read_json(path)
    except OSError:
        return empty()
    except ValueError as exc:
        set_aside(path, str(exc))
        return empty()
    try:
        return parse(data)
    except (ShapeError, ValueError, TypeError, KeyError) as exc:
        set_aside(path, str(exc))
        return empty()


def user(path: Path, parse: Callable[[Any], T], what: str, fix: str) -> T:
    """Read a file the user gave: every problem is an :class:`InputFileError` (exit 3)."""
    try:
        if path.is_dir():
            raise InputFileError(str(path), f"is a folder, not {what}", fix)
        if path.exists() and not _is_regular(path):
            raise InputFileError(str(path), f"is not a regular file (a FIFO or a device?), "
                                 f"not {what}", fix)
        data = read_json(path)
    except FileNotFoundError:
        raise InputFileError(str(path), "no such file", fix) from None
    except OSError as exc:
        raise FileSystemError.of(exc, f"cannot read {what}") from None
    except ValueError as exc:
        raise InputFileError(str(path), f"not {what}: {exc}", fix) from None
    try:
        return parse(data)
    except (ShapeError, ValueError, TypeError, KeyError) as exc:
        raise InputFileError(str(path), f"not {what}: {exc}", fix) from None


# -- the kinds ----------------------------------------------------------------------------

def parse_kernel_installs(data: Any) -> dict[str, str]:
    """``kernel-installs.json``: absolute tree path → variant key."""
    out: dict[str, str] = {}
    for tree, key in obj(data).items():
        if not tree.startswith("/"):
            raise ShapeError(tree, "not an absolute path")
        out[tree] = string(key, tree)
    return out


def read_kernel_installs(path: Path) -> dict[str, str]:
    return own(path, parse_kernel_installs, dict)


def parse_kernel_record(data: Any) -> dict[str, Any] | None:
    """``record.json`` of a kernel cache entry: the artifact's key less its source
    folder's content (``config``), its key, and what its compile read (``record``, as
    :func:`builder.source.inputs.parse_record` reads it)."""
    d = obj(data)
    get(d, "config", string)
    get(d, "key", string)
    get(d, "record", obj)
    return d


def read_kernel_record(path: Path) -> dict[str, Any] | None:
    return own(path, parse_kernel_record, lambda: None)


def parse_manifest(data: Any) -> dict[str, Any]:
    """An install's or kernel tree's ``manifest.json``: a key and its files."""
    d = obj(data)
    string(get(d, "key", string), "key")
    for i, f in enumerate(list_of(get(d, "files", list_of), "files")):
        fo = obj(f, f"files[{i}]")
        rel = get(fo, "path", string, f"files[{i}]")
        if rel.startswith("/") or ".." in rel.split("/"):
            raise ShapeError(f"files[{i}].path", f"{rel!r} leaves the install folder")
        get(fo, "size", integer, f"files[{i}]")
        get(fo, "sha256", string, f"files[{i}]")
    for i, link in enumerate(list_of(d.get("links", []), "links")):  # absent in old ones
        lo = obj(link, f"links[{i}]")
        rel = get(lo, "path", string, f"links[{i}]")
        if rel.startswith("/") or ".." in rel.split("/"):
            raise ShapeError(f"links[{i}].path", f"{rel!r} leaves the install folder")
        get(lo, "target", string, f"links[{i}]")
    return d


def read_manifest(path: Path) -> dict[str, Any] | None:
    """A manifest, or None when it is missing or damaged (the install then does not
    count, and is rebuilt; a damaged manifest is not renamed, since the folder is
    replaced by the next publish)."""
    if not _is_regular(path):
        return None
    try:
        return parse_manifest(read_json(path))
    except (OSError, ValueError):
        return None


def parse_digest_cache(data: Any) -> dict[str, tuple[int, int, int, int, str]]:
    """``digests.json``: file → (size, mtime_ns, ctime_ns, inode, sha256)."""
    d = obj(data)
    if get(d, "version", integer) != 1:
        raise ShapeError("version", "unknown version")
    out: dict[str, tuple[int, int, int, int, str]] = {}
    for path, rec in obj(get(d, "files", obj), "files").items():
        r = list_of(rec, path)
        if len(r) != 5:
            raise ShapeError(path, "expected [size, mtime_ns, ctime_ns, inode, sha256]")
        sha = string(r[4], path)
        if len(sha) != 64:
            raise ShapeError(path, "not a sha256")
        out[path] = (integer(r[0], path), integer(r[1], path, -2**62),
                     integer(r[2], path, -2**62), integer(r[3], path), sha)
    return out


def read_digest_cache(path: Path) -> dict[str, tuple[int, int, int, int, str]]:
    return own(path, parse_digest_cache, dict)


def write_json(path: Path, data: Any) -> bool:
    """Write one of builder's files atomically; False when the folder is not writable
    (a cache that cannot be saved is recomputed next time)."""
    from builder.errors import OwnershipError
    from builder.util.files import atomic_write

    try:
        atomic_write(path, json.dumps(data, indent=1, sort_keys=True))
        return True
    except (OSError, OwnershipError):  # a link or a foreign place: refused, not saved
        return False


def write_digest_cache(path: Path, entries: dict[str, tuple[int, int, int, int, str]]
                       ) -> None:
    if path.parent.is_dir():
        write_json(path, {"version": 1, "files": {k: list(v) for k, v in entries.items()}})


def _pair_list(v: Any, where: str) -> list[Any]:
    for i, pair in enumerate(list_of(v, where)):
        p = list_of(pair, f"{where}[{i}]")
        if len(p) != 2:
            raise ShapeError(f"{where}[{i}]", "expected a pair of strings")
        string(p[0], f"{where}[{i}][0]")
        string(p[1], f"{where}[{i}][1]")
    return list(v)


def _numbers(v: Any, where: str) -> list[float]:
    return [number(x, f"{where}[{i}]", -1e300) for i, x in enumerate(list_of(v, where))]


def _file_stats(v: Any, where: str) -> list[Any]:
    """[[path, size, mtime_ns, inode], ...]"""
    for i, rec in enumerate(list_of(v, where)):
        r = list_of(rec, f"{where}[{i}]")
        if len(r) != 4:
            raise ShapeError(f"{where}[{i}]", "expected [path, size, mtime_ns, inode]")
        string(r[0], f"{where}[{i}]")
        for x in r[1:]:
            integer(x, f"{where}[{i}]", -2**62, 2**64)
    return list(v)


def _strings(v: Any, where: str) -> list[str]:
    return [string(x, f"{where}[{i}]") for i, x in enumerate(list_of(v, where))]


# host.json: probe results keyed by "<kind>|<exe>|<identity>|<extra>"

def parse_host_cache(data: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, v in obj(data).items():
        if key.startswith("tool:"):
            d = obj(v, key)
            get(d, "version", string, key)
            optional(d, "archs", _strings, key)
            optional(d, "static_runtime", boolean, key)
            optional(d, "identity", string, key)
            optional(d, "files", _file_stats, key)
        elif key.startswith("python|"):
            d = obj(v, key)
            if d:  # {}: the interpreter could not be probed
                for f in ("version", "full"):
                    get(d, f, string, key)
                get(d, "packages", _pair_list, key)
                optional(d, "cmake_prefixes", _pair_list, key)
                optional(d, "purelib", string, key)
                optional(d, "purelib_mtime", lambda x, w: number(x, w, -1e300), key)
        elif key.startswith("dpkg-multiarch|"):
            _pair_list(v, key)
        else:
            continue  # an entry of another builder version: dropped, re-probed
        out[key] = v
    return out


def read_host_cache(path: Path) -> dict[str, Any]:
    return own(path, parse_host_cache, dict)


# memory-history.json: measured compiles


# step-times.json: step key → seconds

def parse_step_times(data: Any) -> dict[str, float]:
    return {str(k): number(v, k) for k, v in obj(data).items()}


def read_step_times(path: Path) -> dict[str, float]:
    return own(path, parse_step_times, dict)


# last-build.json: what `builder report` draws

def parse_last_build(data: Any) -> dict[str, Any]:
    d = obj(data)
    for f in ("started", "ended"):
        get(d, f, lambda x, w: number(x, w, -1e300))
    optional(d, "budget", number, "")
    get(d, "host", string, default="")
    s = get(d, "summary", obj)
    for f in ("done", "cached", "skipped", "failed", "aborted"):
        get(s, f, integer, "summary")
    for i, v in enumerate(list_of(d.get("variants", []), "variants")):
        vo = obj(v, f"variants[{i}]")
        for f in ("id", "status"):
            get(vo, f, string, f"variants[{i}]")
        optional(vo, "reason", string, f"variants[{i}]")
    for i, st in enumerate(list_of(d.get("steps", []), "steps")):
        so = obj(st, f"steps[{i}]")
        get(so, "id", string, f"steps[{i}]")
        optional(so, "status", string, f"steps[{i}]")
        for f in ("start", "end", "seconds"):
            optional(so, f, lambda x, w: number(x, w, -1e300), f"steps[{i}]")
    for i, j in enumerate(list_of(d.get("compile_jobs", []), "compile_jobs")):
        jo = obj(j, f"compile_jobs[{i}]")
        get(jo, "file", string, f"compile_jobs[{i}]")
        for f in ("t_start", "t_end"):
            get(jo, f, lambda x, w: number(x, w, -1e300), f"compile_jobs[{i}]")
        for f in ("peak", "estimate"):
            optional(jo, f, number, f"compile_jobs[{i}]")
    if "dist" in d:  # what ran on the distributed pool (--dist)
        do = get(d, "dist", obj)
        get(do, "scheduler", string, "dist")
        for f in ("compiles", "remote", "failed_there"):
            get(do, f, integer, "dist")
        for i, sv in enumerate(list_of(do.get("servers", []), "dist.servers")):
            so = obj(sv, f"dist.servers[{i}]")
            for f in ("name", "addr"):
                get(so, f, string, f"dist.servers[{i}]")
            get(so, "jobs", integer, f"dist.servers[{i}]")
            for f in ("cores", "memory", "peak", "oom_kills"):
                optional(so, f, number, f"dist.servers[{i}]")
    return d


def read_last_build(path: Path) -> dict[str, Any] | None:
    """The last build's record; None when there is none (or it was damaged)."""
    return own(path, parse_last_build, lambda: None)


# reports/<step>.jobs.json: one build step's compile jobs, from its memory broker

def parse_jobs_report(data: Any) -> dict[str, Any]:
    d = obj(data)
    get(d, "step", string)
    number(d.get("wall0", 0), "wall0", -1e300)
    optional(d, "budget", number, "")
    for i, j in enumerate(list_of(d.get("jobs", []), "jobs")):
        jo = obj(j, f"jobs[{i}]")
        get(jo, "queued", lambda x, w: number(x, w, -1e300), f"jobs[{i}]")
        for f in ("started", "ended"):
            optional(jo, f, lambda x, w: number(x, w, -1e300), f"jobs[{i}]")
        optional(jo, "file", string, f"jobs[{i}]")
    return d


def read_jobs_report(path: Path) -> dict[str, Any] | None:
    return own(path, parse_jobs_report, lambda: None)


# builder.lock: the user's lockfile

def parse_lockfile(data: Any, version: int) -> dict[str, Any]:
    d = obj(data)
    if d.get("version") != version:
        raise ShapeError("version", f"expected {version} (a builder lockfile)")
    for name, v in get(d, "variants", obj).items():
        vo = obj(v, f"variants.{name}")
        w = f"variants.{name}"
        optional(vo, "version", string, w)
        optional(vo, "archs", _strings, w)
        for group in ("options", "pins"):
            if vo.get(group) is not None:
                for k, val in obj(vo[group], f"{w}.{group}").items():
                    string(val, f"{w}.{group}.{k}")
    return d


def read_lockfile(path: Path, version: int) -> dict[str, Any]:
    return user(path, lambda d: parse_lockfile(d, version), "a builder lockfile",
                "write one with `builder lock` (or fix the file named)")
