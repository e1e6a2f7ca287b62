"""`builder cache info|prune` on a synthetic state folder: what is kept, what may go."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from builder.source.fetch import MARKER
from builder.util.files import file_sha256
from builder.workspace import prune as cache
from builder.workspace import usage as cachescan
from builder.workspace.paths import Workspace

DAY = 86400.0
NOW = time.time()
DEAD_PID = 2**22 + 12345  # above pid_max's default: no such process


def age(path: Path, days: float) -> None:
    t = NOW - days * DAY
    for p in [path, *path.rglob("*")] if path.is_dir() else [path]:
        os.utime(p, (t, t), follow_symlinks=False)


def install(state: Path, recipe: str, key: str, days: float, options: dict[str, str],
            complete: bool = True) -> Path:
    d = state / "install" / recipe / f"cpu-release-{key}"
    (d / "lib").mkdir(parents=True)
    (d / "lib" / "lib.a").write_bytes(b"x" * 5000)
    files = [{"path": "lib/lib.a", "size": 5000 if complete else 4000,
              "sha256": file_sha256(d / "lib" / "lib.a")}]
    published = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - days * DAY))
    (d / "manifest.json").write_text(json.dumps(
        {"recipe": recipe, "version": "1.0.0", "backend": "cpu", "build_type": "release",
         "python": "", "archs": [], "options": options, "key": key * 5, "files": files,
         "published": published}))
    age(d, days)
    return d


def folder(path: Path, days: float, size: int = 3000) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "data").write_bytes(b"y" * size)
    age(path, days)
    return path


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    w = Workspace.at(tmp_path / "project", tmp_path / "state")
    w.root.mkdir()
    s = w.state
    s.mkdir()
    (s / ".builder-state").write_text("builder\n")  # builder made it (ownership)
    install(s, "greet", "aaaaaaaaaaaa", 40, {"loud": "False"})
    install(s, "greet", "bbbbbbbbbbbb", 10, {"loud": "True"})  # the newest: kept
    install(s, "greet", "dddddddddddd", 1, {"loud": "False"}, complete=False)  # broken
    install(s, "app", "cccccccccccc", 20, {})
    for key, days in (("aaaaaaaaaaaa", 40), ("bbbbbbbbbbbb", 10), ("eeeeeeeeeeee", 50)):
        folder(s / "build" / "greet" / f"cpu-release-{key}", days)
    folder(s / "build" / "app" / "cpu-release-cccccccccccc", 20)
    folder(s / "stage" / "greet" / "cpu-release-ffffffffffff", 30)
    folder(s / "wheels" / "cpu" / "aaaaaaaaaaaa", 40)  # wheels/<backend>/<variant key>
    folder(s / "wheels" / "cpu" / "bbbbbbbbbbbb", 10)
    (s / "wheels" / "cpu" / "bbbbbbbbbbbb" / f".greet-1.0-py3-none-any.whl.tmp{DEAD_PID}"
     ).write_text("half a wheel")
    # kernels: one cache entry listed by a published manifest, one not
    root = w.root.parent / "kroot"
    tree = root / "cuda"
    tree.mkdir(parents=True)
    (tree / "manifest.json").write_text(json.dumps(
        {"variant": "kern/cuda-release-123412341234", "key": "k",
         "artifacts": [{"key": "1" * 64, "path": "scale/sm_80.ptx"}], "files": []}))
    (s / "kernel-installs.json").write_text(json.dumps({str(tree): "k"}))
    folder(s / "kernels" / ("1" * 20), 60)
    folder(s / "kernels" / ("2" * 20), 60)
    folder(s / "kernels" / (("3" * 20) + ".partial"), 1)
    folder(root / f".cuda.tmp{DEAD_PID}", 1)
    (root / f".cuda.tmp{DEAD_PID}" / ".builder-owned").write_text("builder\n")  # publish's
    # sources: one used by a kept build folder's CMakeCache, one not
    for key in ("a" * 20, "b" * 20):
        folder(s / "sources" / key, 30)
        (s / "sources" / key / MARKER).write_text(json.dumps({"rev": key[0] * 40}))
    (s / "build" / "greet" / "cpu-release-bbbbbbbbbbbb" / "cmake").mkdir()
    (s / "build" / "greet" / "cpu-release-bbbbbbbbbbbb" / "cmake" / "CMakeCache.txt"
     ).write_text(f"CMAKE_HOME_DIRECTORY:INTERNAL={s}/sources/{'a' * 20}\n")
    folder(s / "sources" / (("c" * 20) + ".partial"), 2)
    # leftovers of killed builds, and one being written by a live process (this one)
    (s / f".host.json.tmp{DEAD_PID}").write_text("{}")
    (s / f".last-build.json.tmp{os.getpid()}").write_text("{}")
    folder(s / "install" / "greet" / f".cpu-release-aaaaaaaaaaaa.old{DEAD_PID}", 5)
    # logs: of the last build (kept) and older ones
    (s / "last-build.json").write_text(json.dumps({"started": NOW - 3600}))
    for name, days in (("greet_cpu-release-bbbbbbbbbbbb_build.log", 0),
                       ("greet_cpu-release-aaaaaaaaaaaa_build.log", 40)):
        (s / "logs").mkdir(exist_ok=True)
        (s / "logs" / name).write_text("log")
        age(s / "logs" / name, days)
    return w


def by_path(entries: list[cachescan.Entry]) -> dict[str, cachescan.Entry]:
    return {e.path: e for e in entries}


def test_scan_keeps_what_builds_need(ws: Workspace) -> None:
    s = ws.state
    e = by_path(cachescan.scan(ws))
    keep = {p for p, x in e.items() if not x.removable}
    go = {p for p, x in e.items() if x.removable}

    def p(*parts: str) -> str:
        return str(s.joinpath(*parts))

    assert p("install", "greet", "cpu-release-bbbbbbbbbbbb") in keep  # newest of its label
    assert p("install", "app", "cpu-release-cccccccccccc") in keep
    assert p("install", "greet", "cpu-release-aaaaaaaaaaaa") in go  # older, same label
    assert p("install", "greet", "cpu-release-dddddddddddd") in go  # incomplete
    assert p("build", "greet", "cpu-release-bbbbbbbbbbbb") in keep
    assert p("build", "app", "cpu-release-cccccccccccc") in keep
    assert p("build", "greet", "cpu-release-aaaaaaaaaaaa") in go
    assert p("build", "greet", "cpu-release-eeeeeeeeeeee") in go  # older than the kept one
    assert p("stage", "greet", "cpu-release-ffffffffffff") in go
    assert p("wheels", "cpu", "bbbbbbbbbbbb") in keep
    assert p("wheels", "cpu", "aaaaaaaaaaaa") in go
    assert e[p("wheels", "cpu", "aaaaaaaaaaaa")].recipe == "greet"
    assert p("kernels", "1" * 20) in keep and p("kernels", "2" * 20) in go
    assert e[p("kernels", "1" * 20)].recipe == "kern"
    assert p("sources", "a" * 20) in keep and p("sources", "b" * 20) in go
    tree = str(ws.root.parent / "kroot" / "cuda")
    assert e[tree].kind == "kernel-installs" and tree in keep
    temps = {x.path for x in e.values() if x.kind == "temporary"}
    assert temps == {p("kernels", "3" * 20 + ".partial"), p("sources", "c" * 20 + ".partial"),
                     p(f".host.json.tmp{DEAD_PID}"), p(f".last-build.json.tmp{os.getpid()}"),
                     p("install", "greet", f".cpu-release-aaaaaaaaaaaa.old{DEAD_PID}"),
                     p("wheels", "cpu", "bbbbbbbbbbbb",
                       f".greet-1.0-py3-none-any.whl.tmp{DEAD_PID}"),
                     str(ws.root.parent / "kroot" / f".cuda.tmp{DEAD_PID}")}
    assert p(f".last-build.json.tmp{os.getpid()}") in keep  # its writer is alive
    assert p("logs", "greet_cpu-release-bbbbbbbbbbbb_build.log") in keep
    assert p("logs", "greet_cpu-release-aaaaaaaaaaaa_build.log") in go
    assert p("last-build.json") in keep


def test_lockfile_pins_an_older_install(ws: Workspace, tmp_path: Path) -> None:
    lock = tmp_path / "builder.workspace.lock"
    lock.write_text(json.dumps({"version": 1, "variants": {"greet/cpu-release": {
        "version": "1.0.0", "archs": [], "options": {"loud": "False"},
        "pins": {"source": "b" * 40}}}}))
    e = by_path(cachescan.scan(ws, lock))
    old = e[str(ws.state / "install" / "greet" / "cpu-release-aaaaaaaaaaaa")]
    assert old.keep == "pinned by the lockfile"
    assert not e[str(ws.state / "build" / "greet" / "cpu-release-aaaaaaaaaaaa")].removable
    assert e[str(ws.state / "sources" / ("b" * 20))].keep == "pinned by the lockfile"
    # builder.workspace.lock in the project is used when no --lockfile is given
    (ws.root / "builder.workspace.lock").write_text(lock.read_text())
    e2 = by_path(cachescan.scan(ws))
    assert not e2[old.path].removable


def test_select_by_age_and_size(ws: Workspace) -> None:
    entries = cachescan.scan(ws)
    removable = [e for e in entries if e.removable]
    everything = cache.select(entries)
    assert {e.path for e in everything} == {e.path for e in removable}
    # temporaries first, then oldest first
    kinds = [e.kind for e in everything]
    assert kinds[: kinds.count("temporary")] == ["temporary"] * kinds.count("temporary")
    rest = [e.mtime for e in everything if e.kind != "temporary"]
    assert rest == sorted(rest)
    old = cache.select(entries, older_than=35 * DAY, now=NOW)
    assert {e.kind for e in old if e.kind != "temporary"} <= {"installs", "builds",
                                                               "wheels", "kernels", "logs"}
    assert all(NOW - e.mtime >= 35 * DAY for e in old if e.kind != "temporary")
    total = sum(e.size for e in entries if e.kind != "kernel-installs")
    limit = total - 8000
    some = cache.select(entries, max_size=limit)
    assert sum(e.size for e in some) >= 8000
    assert len(some) < len(everything)
    assert cache.select(entries, max_size=10**15) == [e for e in everything
                                                      if e.kind == "temporary"]


def test_prune_removes_only_unneeded(ws: Workspace, cli: Callable[..., object]) -> None:
    before = cachescan.scan(ws)
    kept = {e.path for e in before if not e.removable}
    r = cli("--state-dir", str(ws.state), "cache", "prune", "--dry-run", cwd=ws.root)
    assert r.code == 0 and "would remove" in r.out  # type: ignore[attr-defined]
    lock = str(ws.lock_file)  # prune holds the workspace lock
    assert {e.path for e in cachescan.scan(ws)} - {lock} == {e.path for e in before}  # dry run
    r = cli("--state-dir", str(ws.state), "cache", "prune", "--format", "json", cwd=ws.root)
    data = json.loads(r.out)  # type: ignore[attr-defined]
    assert data["freed"] > 0 and data["total_after"] < data["total_before"]
    for e in before:
        assert Path(e.path).exists() == (e.path in kept), e
    assert not list(ws.state.rglob("*.prune*"))
    after = cachescan.scan(ws)
    assert all(not e.removable for e in after)


def test_info_text_and_json(ws: Workspace, cli: Callable[..., object]) -> None:
    r = cli("--state-dir", str(ws.state), "cache", "info", cwd=ws.root)
    out = r.out  # type: ignore[attr-defined]
    for word in ("installs", "builds", "kernels", "temporary", "per recipe", "greet", "app",
                 "published kernel trees", "would free"):
        assert word in out
    r = cli("--state-dir", str(ws.state), "cache", "info", "--format", "json", cwd=ws.root)
    data = json.loads(r.out)  # type: ignore[attr-defined]
    assert data["kinds"]["installs"]["entries"] == 4
    assert data["recipes"]["greet"]["installs"] > 0
    assert data["reclaimable"] > 0


def test_bad_limits_are_usage_errors(ws: Workspace, cli: Callable[..., object]) -> None:
    for args in (("prune", "--max-size", "lots"), ("prune", "--older-than", "soon"),
                 ("info", "--dry-run")):
        r = cli("--state-dir", str(ws.state), "cache", *args, cwd=ws.root)
        assert r.code == 2  # type: ignore[attr-defined]


def test_human_and_ages() -> None:
    assert cache.human(512) == "512 B"
    assert cache.human(10 * 2**30) == "10.0 GiB"
    assert cache.parse_age("30d") == 30 * DAY and cache.parse_age("12h") == 12 * 3600
    with pytest.raises(ValueError):
        cache.parse_age("30 fortnights")


def test_empty_state(tmp_path: Path) -> None:
    w = Workspace.at(tmp_path, tmp_path / "nothing")
    assert cachescan.scan(w) == []
    assert cache.prune(w)["freed"] == 0


def test_fetched_sources_are_attributed_to_their_recipe(ws: Workspace) -> None:
    (ws.root / "recipes").mkdir()
    (ws.root / "recipes" / "g.yaml").write_text(
        'package: {name: g, version: "1"}\nsource:\n  git: https://example.org/g.git\n'
        f"  rev: {'a' * 40}\nbackends: {{cpu: {{}}}}\n")
    src = ws.state / "sources" / ("b" * 20)
    (src / MARKER).write_text(json.dumps({"location": "https://example.org/g.git"}))
    e = by_path(cachescan.scan(ws))
    assert e[str(src)].recipe == "g"
    assert cache.summary(ws, list(e.values()))["recipes"]["g"]["sources"] > 0
