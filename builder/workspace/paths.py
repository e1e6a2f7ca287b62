"""Where a project's builds live: everything under ``<project>/.builder``.

=====================  ==========================================================
``conan/``             the project-local Conan home (never ``~/.conan2``)
``build/<r>/<v>/``     generated conanfile and profile, Conan output, CMake build
``stage/<r>/<v>/``     ``cmake --install`` target before publication
``install/<r>/<v>/``   published install trees, each with ``manifest.json``
``kernels/<key>/``     per-(kernel, arch) artifact cache, content addressed
``wheels/<b>/<key>/``  wheels, per backend and compile key
``done/<hash>``        test and wheel steps that succeeded, by their inputs hash
``sources/<key>/``     fetched git/url sources, keyed by what was fetched
``publish/<v>/``       packages being uploaded to a Conan remote
``ccache/ sccache/``   the compiler cache of ``--compiler-cache``
``logs/``              one log file per step of the last build
``reports/``           the memory broker's per-build job reports
``host.json``          cached tool and interpreter probes
``memory-history.json``  measured peak memory and time per translation unit
``step-times.json``    how long each step took (for the next build's ETA)
``last-build.json``    the last build's record (``builder report``)
``kernel-installs.json``  the published kernel trees builder made, with their keys
``report.html``        ``builder report``'s default output
``digests.json``       source-file digests keyed by size, mtime, ctime and inode
``schema-passes.json``  the recipe files (by content) that passed the recipe schema
``.builder-state``     the marker that says builder made (or adopted) this folder
=====================  ==========================================================
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Workspace"]


@dataclass(frozen=True)
class Workspace:
    """A project's folders.  The folders a plan names for every variant (builds, stages,
    installs, the Conan home, the memory history) are made once per workspace: a plan of
    thousands of variants asks for each of them thousands of times."""

    root: Path
    state: Path

    @staticmethod
    def at(root: Path, state: Path | None = None) -> Workspace:
        root = root.resolve()
        return Workspace(root, (state or root / ".builder").resolve())

    @property
    def recipes_dir(self) -> Path:
        return self.root / "recipes"

    @functools.cached_property
    def conan_home(self) -> Path:
        return self.state / "conan"

    @property
    def host_cache(self) -> Path:
        return self.state / "host.json"

    @property
    def logs(self) -> Path:
        return self.state / "logs"

    @property
    def kernel_cache(self) -> Path:
        return self.state / "kernels"

    @property
    def lock_file(self) -> Path:
        return self.state / "lock"

    @property
    def reports(self) -> Path:
        return self.state / "reports"

    @functools.cached_property
    def memory_history(self) -> Path:
        return self.state / "memory-history.json"

    @property
    def step_times(self) -> Path:
        return self.state / "step-times.json"

    @property
    def last_build(self) -> Path:
        return self.state / "last-build.json"

    @property
    def kernel_installs(self) -> Path:
        return self.state / "kernel-installs.json"

    @property
    def digest_cache(self) -> Path:
        return self.state / "digests.json"

    @property
    def schema_passes(self) -> Path:
        return self.state / "schema-passes.json"

    @property
    def report_html(self) -> Path:
        return self.state / "report.html"

    @functools.cached_property
    def installs(self) -> Path:
        return self.state / "install"

    @functools.cached_property
    def builds(self) -> Path:
        return self.state / "build"

    @functools.cached_property
    def stages(self) -> Path:
        return self.state / "stage"

    @property
    def wheels(self) -> Path:
        return self.state / "wheels"

    @property
    def done(self) -> Path:
        """Markers of the test and wheel steps that succeeded, named by inputs hash."""
        return self.state / "done"

    @property
    def sources(self) -> Path:
        return self.state / "sources"

    def compiler_cache_dir(self, tool: str) -> Path:
        return self.state / tool

    def wheel_dir(self, backend: str, key: str) -> Path:
        return self.wheels / backend / key[:12]

    def source_dir(self, key: str) -> Path:
        return self.sources / key

    def publish_dir(self, vdir: str) -> Path:
        return self.state / "publish" / vdir

    def temp_file(self, stem: str, suffix: str = "") -> Path:
        """A scratch file of this process in the state folder (named by its pid)."""
        return self.state / f".{stem}.tmp{os.getpid()}{suffix}"

    def build_dir(self, recipe: str, vdir: str) -> Path:
        return self.builds.joinpath(recipe, vdir)

    def stage_dir(self, recipe: str, vdir: str) -> Path:
        return self.stages.joinpath(recipe, vdir)

    def install_dir(self, recipe: str, vdir: str) -> Path:
        return self.installs.joinpath(recipe, vdir)
