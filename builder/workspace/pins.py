"""``builder lock`` and ``builder build --lockfile``.

A lockfile pins, per variant (recipe/backend-build_type[-pyX.Y]): the source (content
digest, git commit or archive sha256), the toolchain versions, the Conan references and
how each is provided (with the system package's version), the GPU archs, the option
values, and the recipe's own inputs: a digest of each field of the recipe (its flags,
defines, backends, …) and of each ``${env.X}`` value it substitutes.  Building with
``--lockfile`` refuses anything that differs, naming each difference (which recipe field,
which variable, which file of a local source folder), so a CI job builds exactly what was
locked.

A local (``path``) source folder is pinned twice: its content digest in each variant's
``source`` pin (what the keys use), and — once per folder, in the lockfile's ``sources``
— a digest per file (:func:`source_files`), so that a drifted ``source`` pin is said as
the files that changed, appeared or went away.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from builder.errors import PlanError
from builder.plan.model import BuildPlan, Variant
from builder.recipe.model import Recipe
from builder.workspace.paths import Workspace

__all__ = ["GENERATOR", "VERSION", "check", "differences", "entry", "file_drift",
           "is_lockfile", "lock_data", "read", "remember", "remembered", "source_files",
           "write"]

#: files named per drifted source folder before "and N more"
SHOWN_FILES = 10

VERSION = 1


def entry(v: Variant) -> dict[str, Any]:
    return {"version": v.version, "archs": list(v.archs), "options": dict(v.options),
            "pins": dict(v.pins)}


def lock_data(plan: BuildPlan) -> dict[str, Any]:
    return {"version": VERSION, "host": plan.host,
            "variants": {v.label: entry(v) for v in plan.variants if v.status != "skip"}}


#: the first key of every lockfile builder writes: what ``lock --output`` may replace
GENERATOR = "builder lock"


def is_lockfile(head: bytes) -> bool:
    return f'"generator": "{GENERATOR}"'.encode() in head[:200]


def source_files(plan: BuildPlan, recipes: list[Recipe], ws: Workspace
                 ) -> dict[str, dict[str, str]]:
    """Each local source folder of the plan's (unskipped) variants → its files' digests
    by relative path (the digest cache makes an unchanged file cost a stat)."""
    from builder.source.digest import StatCache, tree_digests
    from builder.util import records

    used = {v.recipe for v in plan.variants if v.status != "skip"}
    cache = StatCache(records.read_digest_cache(ws.digest_cache))
    out: dict[str, dict[str, str]] = {}
    for r in recipes:
        for s in r.sources if r.name in used else ():
            if s.kind == "path" and s.location not in out and Path(s.location).is_dir():
                files: dict[str, str] = {}
                tree_digests(Path(s.location), cache, s.exclude, files)
                out[s.location] = dict(sorted(files.items()))
    return out


def file_drift(locked: dict[str, str], now: dict[str, str]) -> str:
    """The files of a source folder that differ from the lock, in words ("" none)."""
    parts = [f"{p} changed" for p in sorted(set(locked) & set(now)) if locked[p] != now[p]]
    parts += [f"{p} added" for p in sorted(set(now) - set(locked))]
    parts += [f"{p} removed" for p in sorted(set(locked) - set(now))]
    more = f", and {len(parts) - SHOWN_FILES} more" if len(parts) > SHOWN_FILES else ""
    return ", ".join(parts[:SHOWN_FILES]) + more


def write(plan: BuildPlan, path: Path, force: bool = False,
          files: dict[str, dict[str, str]] | None = None) -> int:
    """Write the lockfile the user named: a link, a FIFO, a device or a file builder
    did not write is refused (``force`` replaces the latter).  ``files``: the local source
    folders' per-file digests (:func:`source_files`)."""
    from builder.util.writer import write_text

    data = {"generator": GENERATOR, **lock_data(plan), **({"sources": files} if files else {})}
    write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n", named=True,
               force=force, recognise=is_lockfile)
    return len(data["variants"])


def remember(ws: Workspace, path: Path) -> None:
    """Note a lockfile ``builder lock`` wrote, so that ``cache prune`` keeps its pins."""
    from builder.util.records import write_json

    paths = [str(p) for p in remembered(ws)]
    if str(path.resolve()) not in paths:
        write_json(ws.state / "lockfiles.json", {"lockfiles": [*paths, str(path.resolve())]})


def remembered(ws: Workspace) -> list[Path]:
    from builder.util.records import read_json

    try:
        data = read_json(ws.state / "lockfiles.json")
        return [Path(p) for p in data.get("lockfiles", []) if isinstance(p, str)]
    except (OSError, ValueError, AttributeError):
        return []


def read(path: Path) -> dict[str, Any]:
    """The lockfile, checked (:func:`builder.util.records.read_lockfile`: exit 3
    naming the file and what is wrong)."""
    from builder.util.records import read_lockfile

    return read_lockfile(path, VERSION)


def differences(plan: BuildPlan, locked: dict[str, Any],
                files: dict[str, dict[str, str]] | None = None) -> list[str]:
    """What differs from the lock, one line each; ``files``: the local source folders'
    per-file digests now, to say which files a drifted ``source`` pin is made of."""
    out: list[str] = []
    variants = locked.get("variants", {})
    sources = locked.get("sources")
    locked_files: dict[str, Any] = sources if isinstance(sources, dict) else {}
    for v in plan.variants:
        if v.status == "skip":
            continue
        name = v.label
        if name not in variants:
            out.append(f"{name}: not in the lockfile")
            continue
        want, have = variants[name], entry(v)
        for field in ("version", "archs"):
            if want.get(field) != have[field]:
                out.append(f"{name}: {field}: locked {want.get(field)}, now {have[field]}")
        for group in ("options", "pins"):
            w, h = want.get(group, {}), have[group]
            for k in sorted(set(w) | set(h)):
                if w.get(k) == h.get(k) or (k == "recipe" and any(
                        p.startswith("recipe.") and w.get(p) != h.get(p) for p in h)):
                    continue  # the whole recipe's digest: only when no field says more
                if group == "pins" and k.startswith(("recipe", "env.")):
                    out.append(f"{name}: {_drift(k, v, w.get(k), h.get(k))}")
                else:
                    out.append(f"{name}: {group[:-1] if group == 'pins' else 'option'} {k}: "
                               f"locked {w.get(k, '(none)')!r}, now {h.get(k, '(none)')!r}")
                if group == "pins" and k == "source" and files:
                    out += [f"{name}: source {folder}: {drift}" for folder in v.sources
                            if isinstance(locked_files.get(folder), dict) and folder in files
                            and (drift := file_drift(locked_files[folder], files[folder]))]
    return out


def _drift(pin: str, v: Variant, locked: object, now: object) -> str:
    """A recipe or environment pin that differs, said as what changed (the digests are
    only evidence)."""
    if locked is None:
        return (f"{pin}: not in the lockfile (it was written before builder pinned the "
                f"recipe's inputs)")
    if now is None:
        return f"{pin}: locked, but the recipe no longer has it"
    if pin.startswith("env."):
        return (f"${{{pin}}} has another value than when locked (a {v.recipe_file} input; "
                f"locked digest {locked}, now {now})")
    field = pin.partition(".")[2] or "compile inputs"
    return (f"recipe {field} changed in {v.recipe_file} since the lock (locked digest "
            f"{locked}, now {now})")


def check(plan: BuildPlan, path: Path,
          files: dict[str, dict[str, str]] | None = None) -> None:
    diffs = differences(plan, read(path), files)
    if diffs:
        shown = "\n  ".join(diffs[:30])
        more = f"\n  … and {len(diffs) - 30} more" if len(diffs) > 30 else ""
        raise PlanError(f"refusing to build: {len(diffs)} difference(s) from {path}:\n  "
                        f"{shown}{more}\n  fix: restore what was locked, or re-lock with "
                        f"`builder lock` if the change is intended")
