"""Read what already exists in the workspace, for the (pure) resolver.

Source trees are hashed by content; published installs count only when their
manifest is complete and every file it lists is present with its recorded size
(a full sha256 check is ``builder verify``).  The result is a :class:`State`
value handed to :func:`builder.resolve.resolver.resolve`.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builder.memory.history import History
from builder.recipe.model import Recipe
from builder.source.cmakelists import listed_sources
from builder.source.digest import StatCache, compile_units, tree_digests
from builder.source.fetch import is_fetched, read_marker, source_key
from builder.source.inputs import parse_record, verify
from builder.workspace.paths import Workspace

__all__ = ["InstallRecord", "State", "manifest_complete", "mark_done", "output_digest",
           "read_manifest", "read_state"]


@dataclass(frozen=True)
class State:
    """What already exists in the workspace (read by :mod:`builder.workspace.state`)."""

    source_digests: tuple[tuple[str, str], ...] = ()
    file_digests: tuple[tuple[str, str], ...] = ()
    installed: frozenset[str] = frozenset()  # compile keys with a complete install
    kernel_artifacts: frozenset[str] = frozenset()  # artifact keys in the kernel cache
    kernel_installs: tuple[tuple[str, str], ...] = ()  # (install folder, variant key)
    #: (artifact config, artifact key) of the kernel cache entries whose record of what
    #: their compile read still holds (:func:`_kernel_records`)
    kernel_records: tuple[tuple[str, str], ...] = ()
    fetched: frozenset[str] = frozenset()  # keys of complete git/url source folders
    #: fetched git trees → (commit, when it was resolved): what an allow_branch rev is
    #: pinned to
    fetched_commits: tuple[tuple[str, str, str], ...] = ()
    #: source root → its translation units (path relative to the root, includes seen)
    compile_units: tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], ...] = ()
    wheels: frozenset[str] = frozenset()  # wheel files already built
    #: absolute source file → (measured peak bytes, seconds, memory curve) from the history
    measured: tuple[tuple[str, int, float, tuple[float, ...]], ...] = ()
    remote_keys: frozenset[str] = frozenset()  # compile keys published on Request.remote
    #: (compile key, output digest) of the installs published on Request.remote, where
    #: the remote knows it: what the dependents of a download are keyed by
    remote_outputs: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = field(default=())
    #: inputs hashes of test and wheel steps that succeeded (``done/``), and the variant
    #: keys complete installs and kernel trees were published with (their tests passed,
    #: or were not asked for)
    done: frozenset[str] = frozenset()
    #: path source folder → digest of its files' names (:func:`tree_digests`)
    name_digests: tuple[tuple[str, str], ...] = ()
    #: complete installs with a record of what their build read
    #: (:mod:`builder.source.inputs`), by config key
    records: tuple[InstallRecord, ...] = ()
    #: compile key of a complete install → its output digest (:func:`output_digest`):
    #: what its dependents are keyed by
    outputs: tuple[tuple[str, str], ...] = ()

    def output(self, compile_key: str) -> str:
        """The output digest of the complete install with ``compile_key`` ("": none)."""
        return self._outputs.get(compile_key, "")

    def remote_output(self, compile_key: str) -> str:
        """The output digest of the install with ``compile_key`` on the remote ("")."""
        return self._remote_outputs.get(compile_key, "")

    @functools.cached_property
    def _outputs(self) -> dict[str, str]:  # made once: a lookup per variant stays O(1)
        return dict(self.outputs)

    @functools.cached_property
    def _remote_outputs(self) -> dict[str, str]:
        return dict(self.remote_outputs)

    def record(self, config_key: str) -> InstallRecord | None:
        """The install built with ``config_key`` whose record verified, else any one."""
        found = [r for r in self.records if r.config_key == config_key]
        return next((r for r in found if r.ok), found[0] if found else None)


@dataclass(frozen=True)
class InstallRecord:
    """A complete install whose manifest records what its build read, checked against the
    disk now: ``ok`` when nothing it read changed (its ``key`` then still names what a
    build would make), ``current`` a digest of what is there now."""

    config_key: str
    key: str
    ok: bool
    current: str
    changed: str = ""  # what was found changed first (for the plan's note)


def output_digest(manifest: dict[str, Any]) -> str:
    """What an install holds, as its manifest lists it: each file's path and sha256 and
    each link's target — not when or with which key it was made.  Two builds that made
    the same bytes have the same output digest."""
    from builder.recipe.model import digest

    files = sorted((str(f.get("path")), str(f.get("sha256"))) for f in
                   manifest.get("files", ()) if isinstance(f, dict))
    links = sorted((str(link.get("path")), str(link.get("target"))) for link in
                   manifest.get("links", ()) if isinstance(link, dict))
    return digest("output", files, links)


def read_manifest(path: Path) -> dict[str, Any] | None:
    """A manifest checked for shape (:func:`builder.util.records.read_manifest`)."""
    from builder.util.records import read_manifest as checked

    return checked(path)


def manifest_complete(folder: Path, manifest: dict[str, Any],
                      cache: StatCache | None = None, content: bool = True) -> bool:
    """Every file the manifest lists is a regular file with its recorded size and — with
    ``content`` — sha256 (through ``cache``, so an unchanged file is not re-read), and
    every link it lists points where it did (a deleted or retargeted link is repaired by
    the next build)."""
    from builder.workspace.verify import link_problems

    try:
        if link_problems(folder, manifest):
            return False
    except (KeyError, TypeError):
        return False
    for f in manifest.get("files", ()):
        try:
            p = folder / f["path"]
            st = os.lstat(p)
            if not stat.S_ISREG(st.st_mode) or st.st_size != f["size"]:
                return False
            if content and (cache or StatCache()).sha256(p, st) != f["sha256"]:
                return False
        except (OSError, KeyError, TypeError):
            return False
    return True


def _is_file(p: Path) -> bool:
    """False also for a name the OS refuses (too long, a NUL byte): recipes are data."""
    try:
        return p.is_file()
    except (OSError, ValueError):
        return False


def project_units(name: str, root: Path, cmake: bool = True
                  ) -> tuple[tuple[tuple[str, tuple[str, ...]], ...], str]:
    """The translation units the project at ``root`` compiles, for the plan's compile-job
    estimate: for a CMake project those its CMake files name
    (:mod:`builder.source.cmakelists`), else every source file below ``root`` with a note
    saying the estimate cannot know; for a setup.py or xmake project every source file."""
    every = compile_units(root)
    if not cmake:
        return every, ""
    listed = listed_sources(root, [rel for rel, _ in every])
    if listed is None:
        return every, (f"{name}: the compile-job estimate counts every source file below "
                       f"{root} ({len(every)}): its CMake files name sources through "
                       f"variables, so which ones it compiles cannot be known before "
                       f"configuring")
    return tuple(u for u in every if u[0] in listed), ""


def mark_done(ws: Workspace, inputs_hash: str) -> None:
    """Record that the step with ``inputs_hash`` (a test, a wheel) succeeded."""
    if inputs_hash and all(c in "0123456789abcdef" for c in inputs_hash):
        from builder.util.writer import write_bytes

        write_bytes(ws.done / inputs_hash, b"", sync=False)


def _done(ws: Workspace, published: set[str]) -> frozenset[str]:
    marks = {p.name for p in ws.done.iterdir()} if ws.done.is_dir() else set()
    return frozenset(marks | published)


def fetched_commits(ws: Workspace, names: Iterable[str]) -> tuple[tuple[str, str, str], ...]:
    """(folder, commit, when resolved) of the fetched git trees ``names`` (their
    markers)."""
    out = []
    for name in names:
        marker = read_marker(ws.sources / name)
        if marker.get("kind") == "git" and marker.get("commit"):
            out.append((name, str(marker["commit"]), str(marker.get("resolved", ""))))
    return tuple(out)


def read_state(ws: Workspace, recipes: Iterable[Recipe]) -> State:
    from builder.util import records

    cache_path = ws.digest_cache
    cache = StatCache(records.read_digest_cache(cache_path))
    state = _read_state(ws, list(recipes), cache)
    if cache.dirty or set(cache.kept()) != set(cache.entries):
        records.write_digest_cache(cache_path, cache.kept())
    return state


def _read_state(ws: Workspace, recipes: list[Recipe], cache: StatCache) -> State:
    source_digests: dict[str, str] = {}
    name_digests: dict[str, str] = {}
    file_digests: dict[str, str] = {}
    for r in recipes:
        for s in r.sources:
            if s.kind == "path" and s.location not in source_digests:
                source_digests[s.location], name_digests[s.location] = \
                    tree_digests(Path(s.location), cache, s.exclude)
        for s in r.sources:
            for patch in s.patches:
                if patch not in file_digests and _is_file(Path(patch)):
                    file_digests[patch] = cache.sha256(Path(patch))
        if r.kernels and r.sources and r.sources[0].kind == "path":
            base = Path(r.sources[0].location) / r.sources[0].subdir
            for k in r.kernels:
                for _, rel in k.sources:
                    p = base / rel
                    if str(p) not in file_digests and _is_file(p):
                        file_digests[str(p)] = cache.sha256(p)
    from builder.util import records

    installed: set[str] = set()
    outputs: dict[str, str] = {}
    published: set[str] = set()  # variant keys of complete installs and kernel trees
    checked: list[InstallRecord] = []
    seen: dict[str, tuple[int, int, int, int] | str] = {}  # recorded input → its stat now
    install_root = ws.installs
    if install_root.is_dir():
        for mf in install_root.glob("*/*/manifest.json"):
            data = read_manifest(mf)
            if data and data.get("key") and manifest_complete(mf.parent, data, cache):
                installed.add(str(data["key"]))
                outputs[str(data["key"])] = output_digest(data)
                published.add(str(data.get("variant_key") or ""))
                rec = _install_record(data, name_digests, cache, seen)
                if rec is not None:
                    checked.append(rec)
    artifacts: set[str] = set()
    if ws.kernel_cache.is_dir():
        artifacts = {p.name for p in ws.kernel_cache.iterdir()
                     if p.is_dir() and not p.name.endswith(".partial")}
    kernel_records = _kernel_records(ws, artifacts, name_digests, cache, seen)
    kernel_installs: dict[str, str] = {}
    registry = records.read_kernel_installs(ws.kernel_installs)
    for tree, key in registry.items():
        data = read_manifest(Path(tree) / "manifest.json")
        if data and data.get("key") == key and manifest_complete(Path(tree), data, cache):
            kernel_installs[tree] = str(key)
            published.add(str(data.get("variant_key") or ""))
    units: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {}
    notes: list[str] = []
    for r in recipes:
        src = r.sources[0] if r.sources else None
        if r.build_system in ("cmake", "python", "xmake") and src is not None:
            if src.kind == "path":
                root = Path(src.location) / src.subdir
            else:  # a git or url source: its files are known once it is fetched
                digests = tuple(file_digests.get(p, "") for p in src.patches)
                fetched_to = ws.sources / source_key(src.kind, src.location, src.rev,
                                                     src.sha256, digests)
                if not is_fetched(fetched_to):
                    continue
                root = fetched_to / src.subdir
            if str(root) not in units:
                units[str(root)], note = project_units(r.name, root,
                                                       cmake=r.build_system == "cmake")
                notes += [note] if note else []
    measured = tuple(sorted((f, int(rec["peak"]), float(rec.get("seconds", 0.0)),
                             tuple(float(x) for x in rec.get("curve", ())))
                            for f, rec in History(ws.memory_history)
                            .by_file.items() if f and rec.get("peak")))
    wheels = frozenset(str(p) for p in ws.wheels.glob("*/*/*.whl")) \
        if ws.wheels.is_dir() else frozenset()
    fetched: set[str] = set()
    if ws.sources.is_dir():
        fetched = {p.name for p in ws.sources.iterdir() if _holds(p, source_digests)}
    return State(wheels=wheels, fetched=frozenset(fetched),
                 fetched_commits=fetched_commits(ws, sorted(fetched)),
                 compile_units=tuple(sorted(units.items())),
                 measured=measured, source_digests=tuple(sorted(source_digests.items())),
                 file_digests=tuple(sorted(file_digests.items())),
                 installed=frozenset(installed), kernel_artifacts=frozenset(artifacts),
                 kernel_installs=tuple(sorted(kernel_installs.items())),
                 kernel_records=tuple(sorted(kernel_records.items())),
                 notes=tuple(notes), done=_done(ws, published - {""}),
                 name_digests=tuple(sorted(name_digests.items())),
                 records=tuple(sorted(checked, key=lambda r: (r.config_key, r.key))),
                 outputs=tuple(sorted(outputs.items())))


def _kernel_records(ws: Workspace, entries: set[str], name_digests: dict[str, str],
                    cache: StatCache, seen: dict[str, tuple[int, int, int, int] | str]
                    ) -> dict[str, str]:
    """Artifact config → the key of a kernel cache entry compiled with it whose record of
    what the compile read verifies against the disk (stat first, content where the stat
    changed): a kernel is found by what it read, not by its whole source folder.  An
    entry whose record names a source folder none of the recipes at hand uses is left
    out; of two entries that both verify (they read the same content) the larger key is
    taken, so that the choice does not depend on the listing's order."""
    from builder.util import records

    found: dict[str, str] = {}
    for name in sorted(entries):
        path = ws.kernel_cache / name / "record.json"
        if not path.is_file():
            continue
        data = records.read_kernel_record(path)
        parsed = parse_record(data["record"]) if data else None
        if data is None or parsed is None or not str(data["key"]).startswith(name):
            continue
        inputs, names = parsed
        if not names or any(root not in name_digests for root in names):
            continue
        if verify(inputs, names, name_digests, cache, seen).ok:
            config, key = str(data["config"]), str(data["key"])
            found[config] = max(key, found.get(config, ""))
    return found


def _holds(folder: Path, source_digests: dict[str, str]) -> bool:
    """Whether a folder of the workspace's sources is complete: fetched, or — builder's
    copy of a local folder, kept in step with it — holding what the folder holds now."""
    if not is_fetched(folder):
        return False
    marker = read_marker(folder)
    if marker.get("kind") != "path":
        return True
    now = source_digests.get(str(marker.get("location", "")))
    return now is None or marker.get("sha256") == now


def _install_record(manifest: dict[str, Any], name_digests: dict[str, str],
                    cache: StatCache, seen: dict[str, tuple[int, int, int, int] | str]
                    ) -> InstallRecord | None:
    """The install's record checked against the disk; None without one, or when it names
    a source folder none of the recipes at hand uses (nothing here can use it)."""
    config_key = manifest.get("config_key")
    parsed = parse_record(manifest.get("record"))
    if not isinstance(config_key, str) or parsed is None:
        return None
    inputs, names = parsed
    if not names or any(root not in name_digests for root in names):
        return None
    verdict = verify(inputs, names, name_digests, cache, seen)
    # a dependent's manifest key holds its dependencies' outputs too: the record keeps
    # the key without them (resolve.keys.own_key)
    own = manifest.get("own_key") or manifest["key"]
    return InstallRecord(config_key, str(own), verdict.ok, verdict.current,
                         verdict.changed)
