"""``builder cache info`` and ``builder cache prune``: what the state folder holds, and
removing what no build needs any more.

:func:`~builder.workspace.usage.scan` classifies the state folder into one
:class:`~builder.workspace.usage.Entry` per item — what it is, its size on disk, when it was
last written, the recipe it belongs to and, for what must stay, why (the rules are in
:mod:`builder.workspace.usage`).  ``info`` sums the entries by kind and by recipe; ``prune``
removes the entries that may go: older installs and their build folders, unreferenced
kernel cache entries and sources, older logs, and the temporary folders and files a
killed build leaves behind (``*.partial``, ``.*.tmp<pid>``, ``.*.old<pid>``).  ``prune``
holds the workspace lock, so no build of the same state folder runs meanwhile, and
renames each item aside before deleting it, so that an interrupted prune leaves a
temporary leftover, never half an install.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from builder.errors import UsageError
from builder.util import writer
from builder.workspace.paths import Workspace
from builder.workspace.usage import Entry, scan

__all__ = ["KINDS", "KIND_TITLES", "format_info", "format_prune", "human", "parse_age",
           "parse_limits", "prune", "remove", "select", "summary"]

KINDS = ("sources", "builds", "stage", "installs", "kernels", "kernel-installs", "wheels",
         "conan", "logs", "temporary", "other")
KIND_TITLES = {"sources": "fetched sources", "builds": "build folders",
               "stage": "stage folders", "installs": "install trees",
               "kernels": "kernel artifacts (cache)", "kernel-installs":
               "kernel artifacts (published)", "wheels": "wheels",
               "conan": "Conan packages", "logs": "logs and reports",
               "temporary": "left by interrupted builds", "other": "other state files"}


# -- sizes and parsing ----------------------------------------------------------------

def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


def parse_age(text: str) -> float:
    """``30d``, ``12h``, ``90m``, ``2w``, ``45s`` → seconds
    (:func:`builder.util.units.parse_duration`).  Raises ValueError."""
    from builder.util.units import parse_duration

    return parse_duration(text)


# -- info ---------------------------------------------------------------------------------

def summary(ws: Workspace, entries: list[Entry]) -> dict[str, Any]:
    kinds = {k: {"bytes": 0, "entries": 0, "reclaimable": 0} for k in KINDS}
    recipes: dict[str, dict[str, int]] = {}
    for e in entries:
        k = kinds[e.kind]
        k["bytes"] += e.size
        k["entries"] += 1
        if e.removable:
            k["reclaimable"] += e.size
        if e.recipe:
            r = recipes.setdefault(e.recipe, {})
            r[e.kind] = r.get(e.kind, 0) + e.size
    inside = sum(e.size for e in entries if e.kind != "kernel-installs")
    return {"state": str(ws.state), "total": inside,
            "reclaimable": sum(e.size for e in entries if e.removable),
            "kinds": kinds, "recipes": dict(sorted(recipes.items())),
            "kernel_trees": sorted(e.path for e in entries if e.kind == "kernel-installs")}


def format_info(data: dict[str, Any]) -> str:
    lines = [f"state folder: {data['state']}", "",
             f"{'kind':16} {'size':>10} {'items':>6} {'reclaimable':>12}  what"]
    for kind in KINDS:
        k = data["kinds"][kind]
        if not k["entries"]:
            continue
        lines.append(f"{kind:16} {human(k['bytes']):>10} {k['entries']:>6} "
                     f"{human(k['reclaimable']) if k['reclaimable'] else '-':>12}  "
                     f"{KIND_TITLES[kind]}")
    lines.append(f"{'total':16} {human(data['total']):>10} {'':>6} "
                 f"{human(data['reclaimable']):>12}  (kernel-installs are outside the state "
                 f"folder)")
    if data["recipes"]:
        cols = [k for k in KINDS if any(k in r for r in data["recipes"].values())]
        width = max(8, *(len(n) for n in data["recipes"]))
        w = {c: max(10, len(c)) for c in cols}
        lines += ["", "per recipe:", f"{'recipe':{width}} " +
                  " ".join(f"{c:>{w[c]}}" for c in cols) + f" {'total':>10}"]
        for name, r in data["recipes"].items():
            lines.append(f"{name:{width}} " + " ".join(
                f"{human(r[c]) if c in r else '-':>{w[c]}}" for c in cols) +
                f" {human(sum(r.values())):>10}")
    if data["kernel_trees"]:
        lines += ["", "published kernel trees (outside the state folder, never pruned):"]
        lines += [f"  {t}" for t in data["kernel_trees"]]
    if data["reclaimable"]:
        lines += ["", f"`builder cache prune` would free {human(data['reclaimable'])} "
                      f"(`--dry-run` lists what)."]
    return "\n".join(lines) + "\n"


# -- prune --------------------------------------------------------------------------------

def select(entries: list[Entry], max_size: int | None = None,
           older_than: float | None = None, now: float | None = None) -> list[Entry]:
    """What to remove: leftovers of interrupted builds first, then unneeded items oldest
    first — all of them, only those older than ``older_than`` seconds, and/or only until
    the state folder is no larger than ``max_size``."""
    now = time.time() if now is None else now
    total = sum(e.size for e in entries if e.kind != "kernel-installs")
    candidates = [e for e in entries if e.removable and e.kind != "kernel-installs"]
    temps = [e for e in candidates if e.kind == "temporary"]
    rest = sorted((e for e in candidates if e.kind != "temporary" and
                   (older_than is None or now - e.mtime >= older_than)),
                  key=lambda e: (e.mtime, e.path))
    chosen: list[Entry] = []
    for e in [*temps, *rest]:
        if max_size is not None and total <= max_size and e.kind != "temporary":
            break
        chosen.append(e)
        total -= e.size
    return chosen


def remove(entry: Entry) -> None:
    """Rename aside, then delete: an interrupted prune leaves a leftover, not half a tree."""
    p = Path(entry.path)
    aside = p.with_name(f".{p.name.lstrip('.')}.prune{os.getpid()}")
    try:
        writer.move(p, aside)
    except FileNotFoundError:
        return
    except OSError:
        aside = p
    writer.remove(aside)


def prune(ws: Workspace, *, lockfile: Path | None = None, max_size: int | None = None,
          older_than: float | None = None, dry_run: bool = False, wait: bool = True
          ) -> dict[str, Any]:
    from builder.workspace.lock import workspace_lock

    if not ws.state.is_dir():
        return {"state": str(ws.state), "dry_run": dry_run, "removed": [], "freed": 0,
                "total_before": 0, "total_after": 0, "max_size": max_size}
    from builder.workspace.ownership import require_state

    require_state(ws.state)  # never prune a folder that is not builder's state folder
    with workspace_lock(ws, wait=wait):
        entries = scan(ws, lockfile)
        before = sum(e.size for e in entries if e.kind != "kernel-installs")
        chosen = select(entries, max_size, older_than)
        if not dry_run:
            for e in chosen:
                remove(e)
            _forget_removed_installs(ws, chosen)
    freed = sum(e.size for e in chosen)
    return {"state": str(ws.state), "dry_run": dry_run, "max_size": max_size,
            "removed": [asdict(e) for e in chosen], "freed": freed,
            "total_before": before, "total_after": before - freed}


def _forget_removed_installs(ws: Workspace, removed: list[Entry]) -> None:
    """Empty per-recipe folders left behind are removed too (never the kinds' roots)."""
    for e in removed:
        parent = Path(e.path).parent
        if parent.parent in (ws.installs, ws.builds, ws.stages, ws.wheels):
            with contextlib.suppress(OSError):  # not empty: other variants are there
                writer.remove_empty_dir(parent)


def format_prune(result: dict[str, Any]) -> str:
    verb = "would remove" if result["dry_run"] else "removed"
    lines = []
    for e in result["removed"]:
        what = e["label"] or e["recipe"] or ""
        lines.append(f"{verb} {human(e['size']):>10}  {e['kind']:10} {e['path']}" +
                     (f"  ({what})" if what else ""))
    freed = human(result["freed"])
    lines.append(f"{'would free' if result['dry_run'] else 'freed'} {freed}: "
                 f"{human(result['total_before'])} → {human(result['total_after'])}")
    limit = result.get("max_size")
    if limit is not None and result["total_after"] > limit:
        lines.append(f"note: still {human(result['total_after'] - limit)} over "
                     f"{human(limit)}: the rest is needed (the newest install of each "
                     f"variant, its build folder, published kernels, the lockfile's "
                     f"variants, the Conan packages); see `builder cache info`")
    return "\n".join(lines) + "\n"


def parse_limits(max_size: str | None, older_than: str | None
                 ) -> tuple[int | None, float | None]:
    from builder.recipe.validate import parse_size

    try:
        size = parse_size(max_size) if max_size is not None else None
        age = parse_age(older_than) if older_than is not None else None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return size, age
