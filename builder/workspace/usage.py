"""Scan the state folder for ``builder cache info`` and ``builder cache prune``
(:mod:`builder.workspace.prune`).

Everything is classified into one :class:`Entry` per item — a fetched source, a build
folder, a stage folder, an install, a kernel cache entry, a published kernel tree, a
wheel folder, the Conan packages of a recipe, a log file, a leftover of an interrupted
build — with its size on disk, when it was last written, the recipe it belongs to and,
for what must stay, why:

* each recipe/variant label's (``greet/cpu-release``) newest complete install, and any
  install the lockfile (``--lockfile``, default ``<project>/builder.lock`` when present)
  pins, with their build folders and wheels;
* the newest build folder of each label (an unfinished build resumes from it);
* kernel cache entries that a published kernel manifest lists, and the published kernel
  trees themselves (those live outside the state folder and are never removed);
* fetched sources that a kept build folder uses or the lockfile pins;
* the Conan home (its packages are shown per recipe, not pruned) and the logs of the
  last build.

Everything else may go: older installs and their build folders, unreferenced kernel
cache entries and sources, older logs, and the temporary folders and files a killed
build leaves behind (``*.partial``, ``.*.tmp<pid>``, ``.*.old<pid>``) unless the
process that writes them is still running.
"""

from __future__ import annotations

import calendar
import os
import re
import sqlite3
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.plan.model import variant_label
from builder.util.writer import TREE_MARKER
from builder.workspace.paths import Workspace

__all__ = ["IN_USE", "Entry", "lockfiles", "record_in_use", "scan", "tree_usage"]

_TEMP = re.compile(r"(\.(tmp|old|prune)(\d+))$|\.(partial|download|strip)$")
_VDIR_KEY = re.compile(r"-[0-9a-f]{12}$")
_LOG_RECIPE = re.compile(r"^(.+?)_(cpu|cuda|rocm|metal)-")


@dataclass
class Entry:
    kind: str
    path: str
    recipe: str  # "" when shared or unknown
    size: int
    mtime: float
    keep: str = ""  # why it must stay; "" when it may be removed
    label: str = ""  # recipe/backend-build_type[-pyX.Y] for builds, installs, wheels

    @property
    def removable(self) -> bool:
        return not self.keep


# -- sizes and manifests ---------------------------------------------------------------

def tree_usage(path: Path) -> tuple[int, float]:
    """(bytes on disk, newest mtime) of a file or folder; hard links counted once,
    symlinks not followed."""
    seen: set[tuple[int, int]] = set()
    total, newest = 0, 0.0
    stack = [path]
    while stack:
        p = stack.pop()
        try:
            st = os.lstat(p)
        except OSError:
            continue
        newest = max(newest, st.st_mtime)
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            blocks = getattr(st, "st_blocks", None)
            total += blocks * 512 if blocks is not None else st.st_size
        if stat.S_ISDIR(st.st_mode):
            try:
                stack.extend(Path(e.path) for e in os.scandir(p))
            except OSError:
                continue
    return total, newest


def _pid_alive(name: str) -> bool:
    m = _TEMP.search(name)
    if not m or not m.group(3):
        return False
    try:
        os.kill(int(m.group(3)), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, OverflowError):
        return True
    return True


def _read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object, or None (missing, damaged, not an object, not a regular file)."""
    from builder.util.records import read_json

    try:
        data = read_json(path)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _label_of(manifest: dict[str, Any]) -> str:
    return variant_label(str(manifest.get("recipe", "")), str(manifest.get("backend", "")),
                         str(manifest.get("build_type", "")), str(manifest.get("python") or ""))


def _published(manifest: dict[str, Any], fallback: float) -> float:
    try:
        return float(calendar.timegm(time.strptime(str(manifest["published"]),
                                                   "%Y-%m-%dT%H:%M:%SZ")))
    except (KeyError, ValueError, OverflowError):
        return fallback


def _complete(folder: Path, manifest: dict[str, Any]) -> bool:
    from builder.workspace.state import manifest_complete

    return bool(manifest.get("key")) and manifest_complete(folder, manifest, content=False)


# -- scanning -----------------------------------------------------------------------------

class _Scan:
    def __init__(self, ws: Workspace, lockfiles: list[Path]) -> None:
        self.ws = ws
        self.entries: list[Entry] = []
        self.locks = [self._read_lockfile(p) for p in lockfiles]
        self.locked: dict[str, Any] = {k: v for lock in self.locks for k, v in lock.items()}
        last = _read_json(ws.state / IN_USE) or {}
        self.last_used = {str(v) for v in last.get("variants", ())}

    @staticmethod
    def _read_lockfile(path: Path) -> dict[str, Any]:
        from builder.workspace.pins import read

        variants = read(path).get("variants", {})
        return variants if isinstance(variants, dict) else {}

    def add(self, kind: str, path: Path, recipe: str = "", keep: str = "", label: str = "",
            mtime: float | None = None) -> Entry:
        size, newest = tree_usage(path)
        e = Entry(kind, str(path), recipe, size, newest if mtime is None else mtime, keep,
                  label)
        self.entries.append(e)
        return e

    def temp(self, path: Path, recipe: str = "") -> None:
        keep = "in use by a running process" if _pid_alive(path.name) else ""
        self.add("temporary", path, recipe, keep)

    def _lock_matches(self, manifest: dict[str, Any]) -> bool:
        return any(self._matches(lock.get(_label_of(manifest)), manifest)
                   for lock in self.locks)

    @staticmethod
    def _matches(want: Any, manifest: dict[str, Any]) -> bool:
        if not isinstance(want, dict):
            return False
        return (want.get("version") == manifest.get("version") and
                list(want.get("archs") or []) == list(manifest.get("archs") or []) and
                dict(want.get("options") or {}) == dict(manifest.get("options") or {}))

    def run(self) -> list[Entry]:
        state = self.ws.state
        if not state.is_dir():
            return []
        kept_vdirs = self._installs(self.ws.installs)
        self._per_variant(self.ws.builds, "builds", kept_vdirs, newest_kept=True)
        self._per_variant(self.ws.stages, "stage", kept_vdirs, newest_kept=False)
        self._wheels(self.ws.wheels, kept_vdirs)
        self._kernels(state)
        self._sources(self.ws.sources, kept_vdirs)
        self._conan(self.ws.conan_home)
        self._logs(state)
        done = {"install", "build", "stage", "wheels", "kernels", "sources", "conan", "logs",
                "reports", ".builder-state"}  # the marker: not an item
        for p in sorted(state.iterdir()):
            if p.name in done:
                continue
            if _TEMP.search(p.name):
                self.temp(p)
            else:
                self.add("other", p, keep="builder's own state")
        return self.entries

    def _installs(self, root: Path) -> set[tuple[str, str]]:
        """Classify install trees; returns the (recipe, vdir) pairs that stay."""
        found: list[tuple[Entry, dict[str, Any]]] = []
        for rdir in sorted(root.iterdir()) if root.is_dir() else []:
            for vdir in sorted(rdir.iterdir()) if rdir.is_dir() else []:
                if _TEMP.search(vdir.name) or vdir.name.startswith("."):
                    self.temp(vdir, rdir.name)
                    continue
                manifest = _read_json(vdir / "manifest.json")
                if not isinstance(manifest, dict) or not _complete(vdir, manifest):
                    e = self.add("installs", vdir, rdir.name)
                    e.label = f"{rdir.name}/{_VDIR_KEY.sub('', vdir.name)}"
                    continue
                e = self.add("installs", vdir, rdir.name, label=_label_of(manifest))
                e.mtime = _published(manifest, e.mtime)
                found.append((e, manifest))
        kept: set[tuple[str, str]] = set()
        newest: dict[str, Entry] = {}

        def order(e: Entry) -> tuple[float, float]:  # published (to the second), then
            try:                                     # the manifest file's own time
                return e.mtime, os.stat(Path(e.path) / "manifest.json").st_mtime
            except OSError:
                return e.mtime, 0.0

        for e, _ in found:
            if e.label not in newest or order(e) > order(newest[e.label]):
                newest[e.label] = e
        for e, manifest in found:
            if newest[e.label] is e:
                e.keep = f"newest complete install of {e.label}"
            elif f"{e.recipe}/{Path(e.path).name}" in self.last_used:
                e.keep = "used by the last build"
            elif self._lock_matches(manifest):
                e.keep = "pinned by the lockfile"
            else:
                continue
            kept.add((e.recipe, Path(e.path).name))
        return kept

    def _per_variant(self, root: Path, kind: str, kept: set[tuple[str, str]],
                     newest_kept: bool) -> None:
        if not root.is_dir():
            return
        for rdir in sorted(root.iterdir()):
            if not rdir.is_dir():
                self.add("other", rdir, keep="builder's own state")
                continue
            mine: list[Entry] = []
            for vdir in sorted(rdir.iterdir()):
                if _TEMP.search(vdir.name) or vdir.name.startswith("."):
                    self.temp(vdir, rdir.name)
                    continue
                label = f"{rdir.name}/{_VDIR_KEY.sub('', vdir.name)}"
                e = self.add(kind, vdir, rdir.name, label=label)
                if (rdir.name, vdir.name) in kept:
                    e.keep = "belongs to a kept install"
                mine.append(e)
            if newest_kept:  # an unfinished or failed build resumes from its folder
                latest: dict[str, Entry] = {}
                for e in mine:
                    if e.label not in latest or e.mtime > latest[e.label].mtime:
                        latest[e.label] = e
                for e in latest.values():
                    e.keep = e.keep or f"newest build folder of {e.label}"

    def _wheels(self, root: Path, kept: set[tuple[str, str]]) -> None:
        """``wheels/<backend>/<variant key>/*.whl``: a wheel folder goes with its variant."""
        if not root.is_dir():
            return
        owner = {Path(e.path).name[-12:]: (e.recipe, e.label) for e in self.entries
                 if e.kind in ("installs", "builds")}
        kept_keys = {vdir[-12:] for _, vdir in kept}
        for bdir in sorted(root.iterdir()):
            for kdir in sorted(bdir.iterdir()) if bdir.is_dir() else []:
                recipe, label = owner.get(kdir.name, ("", ""))
                if _TEMP.search(kdir.name) or kdir.name.startswith("."):
                    self.temp(kdir, recipe)
                    continue
                temps = [p for p in kdir.iterdir() if _TEMP.search(p.name)] \
                    if kdir.is_dir() else []
                e = self.add("wheels", kdir, recipe, label=label,
                             keep="belongs to a kept install" if kdir.name in kept_keys
                             else "")
                for t in temps:  # a wheel being written when its builder was killed
                    e.size -= tree_usage(t)[0]
                    self.temp(t, recipe)

    def _kernels(self, state: Path) -> None:
        referenced: dict[str, str] = {}  # cache entry name → recipe
        registry = _read_json(self.ws.kernel_installs)
        roots: set[Path] = set()
        for tree in (registry or {}) if isinstance(registry, dict) else {}:
            tree_path = Path(tree)
            manifest = _read_json(tree_path / "manifest.json")
            if not isinstance(manifest, dict):
                continue
            recipe = str(manifest.get("variant", "")).split("/", 1)[0]
            artifacts = manifest.get("artifacts")
            for a in artifacts if isinstance(artifacts, list) else []:
                if isinstance(a, dict) and a.get("key"):
                    referenced[str(a["key"])[:20]] = recipe
            self.add("kernel-installs", tree_path, recipe,
                     keep="published kernels (outside the state folder; never pruned)")
            roots.add(tree_path.parent)
        for root in sorted(roots):
            for p in sorted(root.iterdir()) if root.is_dir() else []:
                if p.name.startswith(".") and _TEMP.search(p.name):
                    if (p / TREE_MARKER).is_file():  # a killed publish's, marked first
                        self.temp(p)
                    else:  # in the user's install root and not builder's: left alone
                        self.add("other", p, keep=f"not builder's (no {TREE_MARKER})")
        cache = self.ws.kernel_cache
        for p in sorted(cache.iterdir()) if cache.is_dir() else []:
            if _TEMP.search(p.name):
                self.temp(p)
            elif p.name in referenced:
                self.add("kernels", p, referenced[p.name],
                         keep="listed by a published kernel manifest")
            else:
                self.add("kernels", p)

    def _sources(self, root: Path, kept: set[tuple[str, str]]) -> None:
        from builder.source.fetch import MARKER, is_fetched

        if not root.is_dir():
            return
        used: set[str] = set()
        for recipe, vdir in kept:
            cache = self.ws.build_dir(recipe, vdir) / "cmake" / "CMakeCache.txt"
            try:
                text = cache.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            used.update(re.findall(r"/sources/([0-9a-f]{20})\b", text))
        owners = self._source_owners()
        pinned = {str(w.get("pins", {}).get("source", "")) for w in self.locked.values()
                  if isinstance(w, dict)}
        pinned_parts = {part for text in pinned for part in text.split(",") if part}
        for p in sorted(root.iterdir()):
            if _TEMP.search(p.name) or not is_fetched(p):
                self.temp(p)
                continue
            marker = _read_json(p / MARKER) or {}
            keep = ""
            if p.name in used:
                keep = "used by a kept build folder"
            elif {str(marker.get("rev", "")), str(marker.get("sha256", ""))} & pinned_parts:
                keep = "pinned by the lockfile"
            self.add("sources", p, owners.get(str(marker.get("location", "")), ""), keep)

    def _source_owners(self) -> dict[str, str]:
        """git repository / archive URL → the name of the project's recipe fetching it."""
        from builder.errors import BuilderError
        from builder.recipe.recipeset import load_recipe, recipe_files

        owners: dict[str, str] = {}
        for f in recipe_files(self.ws.recipes_dir):
            try:
                r = load_recipe(f)
            except BuilderError:
                continue
            for src in r.sources:
                if src.kind != "path":
                    owners.setdefault(src.location, r.name)
        return owners

    def _conan(self, home: Path) -> None:
        if not home.is_dir():
            return
        owned: dict[str, str] = {}  # folder below p/ → recipe name
        try:
            db = sqlite3.connect((home / "p" / "cache.sqlite3").as_uri() + "?mode=ro",
                                 uri=True)
            try:
                for table in ("recipes", "packages"):
                    for ref, path in db.execute(f"SELECT reference, path FROM {table}"):
                        owned[str(path)] = str(ref).split("/", 1)[0]
            finally:
                db.close()
        except sqlite3.Error:
            owned = {}
        keep = "Conan packages (not pruned; `conan remove` with this CONAN_HOME)"
        counted: set[str] = set()
        for rel, recipe in sorted(owned.items()):
            p = home / "p" / rel
            if p.is_dir():
                self.add("conan", p, recipe, keep=keep)
                counted.add(str(p))
        size, newest = tree_usage(home)  # the rest: settings, the database, temp folders
        rest = size - sum(x.size for x in self.entries if x.path in counted)
        self.entries.append(Entry("conan", str(home), "", max(rest, 0), newest, keep))

    def _logs(self, state: Path) -> None:
        last = _read_json(self.ws.last_build)
        started = last.get("started", 0) if isinstance(last, dict) else 0
        since = float(started) - 1 if isinstance(started, (int, float)) and \
            not isinstance(started, bool) and abs(started) < 1e12 else 0.0
        for folder in (self.ws.logs, self.ws.reports):
            for p in sorted(folder.iterdir()) if folder.is_dir() else []:
                m = _LOG_RECIPE.match(p.name)
                recipe = m.group(1) if m else ""
                if _TEMP.search(p.name):
                    self.temp(p, recipe)
                    continue
                e = self.add("logs", p, recipe)
                if e.mtime >= since:
                    e.keep = "from the last build"


#: the variants the last ``builder build`` asked for, built or already up to date
IN_USE = "in-use.json"


def record_in_use(ws: Workspace, variant_ids: list[str]) -> None:
    """Note the variants a build uses — also when all are up to date and nothing runs —
    so that ``cache prune`` keeps their installs after another option value was tried."""
    from builder.util.records import write_json

    write_json(ws.state / IN_USE, {"variants": sorted(variant_ids)})


def lockfiles(ws: Workspace, named: Path | None = None) -> list[Path]:
    """The lockfiles whose pins ``prune`` keeps: the one named (``--lockfile``), else
    every lockfile ``builder lock`` wrote for this state folder (remembered in
    ``lockfiles.json``) and the project's ``builder.lock`` and ``builder.workspace.lock``
    — those that still exist."""
    if named is not None:
        return [named]
    from builder.workspace.pins import remembered

    found: list[Path] = []
    for p in (ws.root / "builder.lock", ws.root / "builder.workspace.lock",
              *remembered(ws)):
        if p.is_file() and p.resolve() not in {q.resolve() for q in found}:
            found.append(p)
    return found


def scan(ws: Workspace, lockfile: Path | None = None) -> list[Entry]:
    """Every item of the state folder (and the published kernel trees it knows of)."""
    return _Scan(ws, lockfiles(ws, lockfile)).run()
