"""Carry out a :class:`BuildPlan`: run steps in dependency order, publish results
atomically, and emit structured events for progress output and reports.

Steps that are ``cached`` or ``skip`` are not run.  A failed step marks every
step that depends on it as aborted; independent steps go on with
``keep_going``, otherwise the build stops after the first failure.  Install
trees and cache entries are written next to their final place and renamed into
it, so a reader never sees half of one.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from builder.errors import DownloadFailed, FetchError, Interrupted, StepFailed
from builder.plan.model import CACHED, SKIP, TO_RUN, BuildPlan, Step
from builder.plan.payloads import (
    CleanStage,
    CollectInstall,
    CompileJobs,
    Download,
    FetchSource,
    KernelEntry,
    PrepareBuild,
    PublishInstall,
    PublishKernels,
    RenderFiles,
    TestRun,
    WheelBuild,
)
from builder.util.files import atomic_write, file_list, file_sha256, replace_dir
from builder.util.runner import Runner
from builder.workspace.paths import Workspace

__all__ = ["OOM_MARKERS", "Event", "Executor", "Summary", "compiler_cache_stats", "needs_work"]

OOM_MARKERS = ("Killed signal terminated program", "virtual memory exhausted",
               "Cannot allocate memory", "out of memory")


@dataclass(frozen=True)
class Event:
    kind: str  # start | done | cached | skip | failed | aborted
    step: str
    seconds: float = 0.0
    message: str = ""
    index: int = 0
    total: int = 0


@dataclass
class Summary:
    done: list[str] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[StepFailed] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed and not self.aborted


def _safe_name(step_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]+", "_", step_id)


class Executor:
    def __init__(self, plan: BuildPlan, ws: Workspace, runner: Runner,
                 on_event: Callable[[Event], None] | None = None,
                 keep_going: bool = False, on_line: Callable[[str, str], None] | None = None
                 ) -> None:
        self.plan = plan
        self.ws = ws
        self.runner = runner
        self.on_event = on_event or (lambda e: None)
        self.on_line = on_line
        self.keep_going = keep_going
        self.broker: Any = None  # the running build step's memory broker, for progress
        self.cache_stats: list[dict[str, int]] = []  # compiler cache hits/misses per build
        self.test_counts: dict[str, Any] = {}  # test step → testcounts.Counts (or None)

    def _emit(self, kind: str, step: Step, seconds: float = 0.0, message: str = "",
              index: int = 0) -> None:
        self.on_event(Event(kind, step.id, seconds, message, index, len(self.plan.steps)))

    def run(self) -> Summary:
        summary = Summary()
        start = time.monotonic()
        bad: set[str] = set()  # failed or aborted steps
        for i, step in enumerate(self.plan.steps, 1):
            if step.status == SKIP:
                summary.skipped.append(step.id)
                bad.add(step.id)
                self._emit("skip", step, message=step.reason, index=i)
                continue
            if step.status == CACHED:
                summary.cached.append(step.id)
                self._emit("cached", step, index=i)
                continue
            broken = [d for d in step.deps if d in bad]
            if broken:
                summary.aborted.append(step.id)
                bad.add(step.id)
                self._emit("aborted", step, message=f"needs {broken[0]}", index=i)
                continue
            if summary.failed and not self.keep_going:
                summary.aborted.append(step.id)
                bad.add(step.id)
                continue
            self._emit("start", step, index=i)
            t0 = time.monotonic()
            try:
                self._run_step(step)
            except StepFailed as failure:
                summary.failed.append(failure)
                bad.add(step.id)
                self._emit("failed", step, time.monotonic() - t0, str(failure), index=i)
                continue
            summary.done.append(step.id)
            self._emit("done", step, time.monotonic() - t0, index=i)
        summary.seconds = time.monotonic() - start
        return summary

    # -- one step -------------------------------------------------------------------

    def _log_path(self, step: Step) -> Path:
        return self.ws.logs / f"{_safe_name(step.id)}.log"

    def _commands(self, step: Step) -> None:
        log = self._log_path(step)
        cwd = Path(step.cwd) if step.cwd else self.ws.root
        cwd.mkdir(parents=True, exist_ok=True)
        callback = None
        if self.on_line is not None:
            sink = self.on_line
            callback = lambda line, sid=step.id: sink(sid, line)  # noqa: E731
        for n, argv in enumerate(step.commands):
            path = log if n == 0 else log.with_suffix(f".{n}.log")
            res = self.runner.run(argv, cwd=cwd, env_changes=dict(step.env), log_path=path,
                                  timeout=step.timeout, on_line=callback)
            if res.interrupted:
                raise Interrupted(f"interrupted during {step.id}; the next build resumes "
                                  f"from the steps that completed")
            if res.returncode != 0:
                why = ""
                if res.timed_out:
                    why = f"stopped after its {step.timeout}s timeout"
                elif any(m in line for line in res.tail for m in OOM_MARKERS):
                    why = ("a compiler was killed, most likely out of memory; lower the "
                           "parallelism (--jobs) or set a memory budget (--memory-budget)")
                raise StepFailed(step.id, list(argv), res.returncode, str(path), res.tail, why)

    def _run_step(self, step: Step) -> None:
        handler = getattr(self, "_do_" + step.kind.replace("-", "_"), None)
        if handler is not None:
            handler(step)
        else:
            self._commands(step)

    def _do_render(self, step: Step) -> None:
        assert isinstance(step.payload, RenderFiles)
        for path, text in step.payload.files:
            atomic_write(Path(path), text)
        self._ensure_conan_home()

    def _ensure_conan_home(self) -> None:
        from builder.remote.conan import ensure_conan_home

        ensure_conan_home(self.ws)

    def _do_build(self, step: Step) -> None:
        """A CMake build with its memory broker running for the compile launchers."""
        from builder.memory.broker import Broker, BrokerConfig

        if not isinstance(step.payload, CompileJobs):
            self._commands(step)
            return
        cfg, prediction = step.payload.memory, step.payload.prediction
        # A short path (Unix socket names are limited to ~100 bytes), unique per process.
        name = f"builder-{os.getpid()}-{_safe_name(step.variant)[-40:]}.sock"
        sock = Path(tempfile.gettempdir()) / name
        broker = Broker(sock, BrokerConfig(
            budget=cfg.budget, slots=cfg.slots, source_root=cfg.source_root,
            build_dir=cfg.build_dir, history_path=cfg.history_path,
            recipe_default=cfg.recipe_default, recipe_globs=cfg.recipe_globs,
            lowmem_flags=cfg.lowmem_flags))
        broker.start()
        self.broker = broker
        cache_before = compiler_cache_stats(dict(step.env))
        try:
            self._commands(replace(step, env=(*step.env, ("BUILDER_BROKER", str(sock)))))
        finally:
            self.broker = None
            broker.stop()
            report = self.ws.state / "reports" / f"{_safe_name(step.id)}.jobs.json"
            cache = _stats_delta(cache_before, compiler_cache_stats(dict(step.env)))
            if cache:
                self.cache_stats.append(cache)
            atomic_write(report, json.dumps({"step": step.id, "budget": cfg.budget,
                                              "wall0": broker.wall0, "compiler_cache": cache,
                                              "slots": cfg.slots,
                                              "prediction": dataclasses.asdict(prediction),
                                              "jobs": broker.report()}, indent=1))

    def _do_prepare(self, step: Step) -> None:
        """Compiler wrappers and build folders for a build driven by pip or xmake."""
        from builder.execute.collect import prepare

        assert isinstance(step.payload, PrepareBuild)
        prepare(step.payload)

    def _do_collect(self, step: Step) -> None:
        """The stage filled from the build's wheel and the recipe's ``install.files``."""
        from builder.execute.collect import CollectError, collect

        assert isinstance(step.payload, CollectInstall)
        log = self._log_path(step)
        try:
            done = collect(step.payload)
        except (CollectError, OSError, ValueError) as exc:  # zipfile.BadZipFile is one
            raise StepFailed(step.id, [], 1, str(log), [], str(exc)) from None
        atomic_write(log, "".join(f"{line}\n" for line in done))

    def _do_test(self, step: Step) -> None:
        """The test command; then how many tests it ran. One that ran none fails unless
        the recipe allows it (``allow_empty``)."""
        from builder.execute.testcounts import verdict

        allow = isinstance(step.payload, TestRun) and step.payload.allow_empty
        log = self._log_path(step)
        try:
            self._commands(step)
            rc = 0
        except StepFailed as failed:
            counts, why = verdict(_read_lines(log), failed.returncode, allow)
            if why is None:  # pytest's "no tests" status, allowed
                self.test_counts[step.id] = counts
                return
            failed.explanation = why or failed.explanation
            raise
        counts, why = verdict(_read_lines(log), rc, allow)
        self.test_counts[step.id] = counts
        if why:
            raise StepFailed(step.id, list(step.commands[-1]) if step.commands else [], 0,
                             str(log), _read_lines(log)[-10:], why)

    def _do_wheel(self, step: Step) -> None:
        from builder.wheels.build import build_wheel

        w = step.payload
        assert isinstance(w, WheelBuild)
        try:
            build_wheel(Path(w.src), Path(w.out_dir), w.name, w.version, w.tag,
                        summary=w.summary)
        except (OSError, ValueError) as exc:
            raise StepFailed(step.id, [], 1, str(self._log_path(step)), [],
                             f"cannot build the wheel: {exc}") from None

    def _do_fetch(self, step: Step) -> None:
        from builder.source import fetch

        src = step.payload
        assert isinstance(src, FetchSource)
        dest, partial = Path(src.dest), Path(src.partial)
        if fetch.is_fetched(dest):
            return
        shutil.rmtree(partial, ignore_errors=True)
        try:
            if src.kind == "path":  # a patched local folder: patched in builder's copy
                from builder.source.digest import SKIP_DIRS

                shutil.copytree(src.location, partial, symlinks=True,
                                ignore=shutil.ignore_patterns(*SKIP_DIRS, "*.egg-info"))
            if src.kind == "url":
                archive = dest.with_name(dest.name + ".download")
                try:
                    fetch.download(src.location, archive, src.sha256)
                    fetch.extract(archive, partial)
                finally:
                    archive.unlink(missing_ok=True)
                fetch.strip_single_top(partial)
            try:
                self._commands(step)  # git clone + checkout, then patches
            except StepFailed as failed:
                if "patch" in Path(failed.argv[0]).name:
                    failed.explanation = "a patch does not apply cleanly to this source"
                raise
            marker: dict[str, object] = {"kind": src.kind, "location": src.location,
                                         "rev": src.rev, "sha256": src.sha256}
            if src.kind == "git":
                from builder.recipe.semantic import is_full_rev
                from builder.util.runner import capture

                rc, out = capture(["git", "-C", str(partial), "rev-parse", "HEAD"])
                head, rev = out.strip(), src.rev
                branch = not is_full_rev(rev)  # opted in with allow_branch
                if rc != 0 or not is_full_rev(head) or (head != rev and not branch):
                    raise FetchError(f"{src.location}: checked out "
                                           f"{head!r}, expected {rev}")
                marker["commit"] = head  # what the branch or tag resolved to, now
                if branch:
                    with open(self._log_path(step), "a", encoding="utf-8") as log:
                        log.write(f"# {rev} resolved to commit {head}\n")
            fetch.write_marker(partial, marker)
            replace_dir(partial, dest)
        except FetchError as exc:
            raise StepFailed(step.id, [], 1, str(self._log_path(step)), [],
                             str(exc)) from None
        finally:
            shutil.rmtree(partial, ignore_errors=True)

    def _do_stage(self, step: Step) -> None:
        if isinstance(step.payload, CleanStage):
            shutil.rmtree(step.payload.stage, ignore_errors=True)
        self._commands(step)

    def _do_kernel(self, step: Step) -> None:
        assert isinstance(step.payload, KernelEntry)
        partial, entry = Path(step.payload.partial), Path(step.payload.entry)
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        try:
            self._commands(step)
            expected = [partial / Path(o).name for o in step.outputs]
            missing = [str(p) for p in expected if not p.is_file() or p.stat().st_size == 0]
            if missing:
                raise StepFailed(step.id, list(step.commands[-1]), 0,
                                 str(self._log_path(step)), [],
                                 f"the compiler exited 0 but wrote no {missing[0]}")
            for p in partial.iterdir():  # intermediates (.air) are not cached
                if p not in expected:
                    p.unlink()
            if entry.exists():
                shutil.rmtree(partial)
            else:
                os.replace(partial, entry)
        finally:
            shutil.rmtree(partial, ignore_errors=True)

    def _do_download(self, step: Step) -> None:
        """Fetch a variant's packages from the remote, check them against the hashes
        written when they were published, and put their files where a build would."""
        from builder.remote import conan as rm

        dl = step.payload
        assert isinstance(dl, Download)
        name, key, conan = dl.remote, dl.key, dl.conan
        log = self._log_path(step)
        try:
            self._commands(step)
        except StepFailed as failed:
            why, fix = rm.explain(name, "\n".join(failed.tail))
            raise DownloadFailed(step.id, failed.log_path, f"remote '{name}' {why}; {fix}",
                                 key, tail=failed.tail) from None

        run = rm.checked(self.runner, step.id, self.ws.state, dict(step.env),
                         log.with_suffix(".check.log"), 600)

        refs = dl.refs
        out_file = self.ws.state / f".download.tmp{os.getpid()}.json"
        found = {ref: rm.locate(run, conan, ref, key, out_file) for ref in refs}
        art = found[refs[-1]]
        main = found[refs[0]] if len(refs) > 1 else None
        problems = [f"{ref}: not in the local cache after the download"
                    for ref, loc in found.items() if loc is None]
        if not problems:
            for loc in found.values():
                assert loc is not None
                try:
                    run([conan, "cache", "check-integrity", loc.ref])
                except StepFailed:
                    problems.append(f"{loc.ref}: Conan's manifest check failed")
        if not problems and art is not None:
            try:
                manifest = json.loads((art.folder / rm.MANIFEST).read_text(encoding="utf-8"))
                problems = rm.verify(manifest, art.folder, main.folder if main else None)
            except (OSError, ValueError) as exc:
                problems = [f"{rm.MANIFEST}: unreadable ({exc})"]
        if problems:
            for loc in found.values():
                if loc is not None:  # never used, never left for the next build
                    run([conan, "remove", loc.ref, "-c"])
            raise DownloadFailed(step.id, str(log), f"the packages from remote '{name}' are "
                                 f"corrupted ({'; '.join(problems[:3])}); removed from the "
                                 f"local cache", key, corrupt=True)
        assert art is not None
        try:
            if main is not None:
                rm.copy_tree(main.folder, Path(dl.stage))
            for wheel in dl.wheels:
                dest = Path(wheel)
                dest.parent.mkdir(parents=True, exist_ok=True)
                tmp = dest.with_name(f".{dest.name}.tmp{os.getpid()}")
                shutil.copyfile(art.folder / "wheels" / dest.name, tmp)
                os.replace(tmp, dest)
            for entry in dl.kernel_entries:
                rm.copy_tree(art.folder / "kernels" / Path(entry).name, Path(entry))
        except OSError as exc:  # the remote's package lacks what this plan needs
            raise DownloadFailed(step.id, str(log), f"the packages from remote '{name}' "
                                 f"lack a file this variant needs ({exc})", key,
                                 corrupt=True) from None

    def _do_publish(self, step: Step) -> None:
        pub = step.payload
        assert isinstance(pub, PublishInstall)
        stage, prefix = Path(pub.stage), Path(pub.prefix)
        manifest = {**pub.meta, "key": step.inputs_hash, "files": file_list(stage),
                    "published": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        atomic_write(stage / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True))
        replace_dir(stage, prefix)

    def _do_publish_kernels(self, step: Step) -> None:
        pub = step.payload
        assert isinstance(pub, PublishKernels)
        tree, root, artifacts = Path(pub.tree), Path(pub.root), pub.artifacts
        tmp = root / f".{tree.name}.tmp{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        records = []
        for a in artifacts:
            rel = Path(a["path"])
            inside = rel.relative_to(rel.parts[0])  # the layout starts with ${backend}/
            if inside.is_absolute() or ".." in inside.parts or not inside.parts:
                raise StepFailed(step.id, [], 1, str(self._log_path(step)), [],
                                 f"refusing to publish {a['path']!r}: it is not a path "
                                 f"below the install root")
            dest = tmp / inside
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(a["cache"], dest)
            record = {**{k: v for k, v in a.items() if k != "cache"},
                      "path": inside.as_posix(), "size": dest.stat().st_size,
                      "sha256": file_sha256(dest)}
            if dest.suffix == ".ptx":  # the ISA the file really declares, not the table's
                m = re.search(rb"^\.version\s+(\d+\.\d+)", dest.read_bytes(), re.M)
                if m:
                    record["ptx_isa"] = m.group(1).decode()
            records.append(record)
        manifest = {"key": step.inputs_hash, "variant": step.variant, "artifacts": records,
                    "files": [{"path": r["path"], "size": r["size"], "sha256": r["sha256"]}
                              for r in records],
                    "published": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        atomic_write(tmp / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True))
        replace_dir(tmp, tree)
        registry_path = self.ws.state / "kernel-installs.json"
        try:
            registry = json.loads(registry_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            registry = {}
        registry[str(tree)] = step.inputs_hash
        atomic_write(registry_path, json.dumps(registry, indent=2, sort_keys=True))


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def compiler_cache_stats(env: dict[str, str]) -> dict[str, int] | None:
    """ccache's counters for the cache a build step uses (None without ccache)."""
    if "CCACHE_DIR" not in env:
        return None
    from builder.util.runner import capture

    rc, out = capture(["ccache", "--print-stats"], env={**os.environ, **env})
    if rc != 0:
        return None
    stats: dict[str, int] = {}
    for line in out.splitlines():
        key, _, value = line.partition("\t")
        if value.strip().isdigit():
            stats[key] = int(value)
    return stats


def _stats_delta(before: dict[str, int] | None, after: dict[str, int] | None
                 ) -> dict[str, int]:
    if before is None or after is None:
        return {}
    d = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    hits = d.get("direct_cache_hit", 0) + d.get("preprocessed_cache_hit", 0)
    return {"hits": hits, "misses": d.get("cache_miss", 0),
            "remote_hits": d.get("remote_storage_hit", 0)}


def needs_work(plan: BuildPlan) -> bool:
    return any(s.status in TO_RUN for s in plan.steps)
