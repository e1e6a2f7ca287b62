"""Where a project's builds live: everything under ``<project>/.builder``.

=====================  ==========================================================
``conan/``             the project-local Conan home (never ``~/.conan2``)
``build/<r>/<v>/``     generated conanfile and profile, Conan output, CMake build
``stage/<r>/<v>/``     ``cmake --install`` target before publication
``install/<r>/<v>/``   published install trees, each with ``manifest.json``
``kernels/<key>/``     per-(kernel, arch) artifact cache, content addressed
``logs/``              one log file per step of the last build
``host.json``          cached tool and interpreter probes
=====================  ==========================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["Workspace"]


@dataclass(frozen=True)
class Workspace:
    root: Path
    state: Path

    @staticmethod
    def at(root: Path, state: Path | None = None) -> Workspace:
        root = root.resolve()
        return Workspace(root, (state or root / ".builder").resolve())

    @property
    def recipes_dir(self) -> Path:
        return self.root / "recipes"

    @property
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

    def build_dir(self, recipe: str, vdir: str) -> Path:
        return self.state / "build" / recipe / vdir

    def stage_dir(self, recipe: str, vdir: str) -> Path:
        return self.state / "stage" / recipe / vdir

    def install_dir(self, recipe: str, vdir: str) -> Path:
        return self.state / "install" / recipe / vdir
