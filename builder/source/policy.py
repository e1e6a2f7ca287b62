"""One policy for every source tree builder uses — ``path``, ``git`` and ``url``.

* **Containment**: a symbolic link that resolves outside the source tree, and any special
  file (FIFO, socket, device), is refused, naming the file (:func:`check_tree`).  Archives
  are checked member by member before extraction (:mod:`builder.source.fetch`); git and
  path trees are checked here, as they will be built: a fetched or copied tree (a patched
  or excluding path source) after its patches apply, a path source built in place before
  each build.
* **Exclusion**: ``source.exclude`` globs (:func:`excluded`) name paths that are not part
  of the source: not checked, not in its digest, not copied.
* **Limits**: every fetch — a git clone, a download, an extraction — has a time limit and
  a size cap (:class:`Limits`, configurable through ``BUILDER_FETCH_TIMEOUT`` and
  ``BUILDER_FETCH_MAX_SIZE``).
* **Clean trees**: the commands builder runs against a source tree (tests) do not write
  Python caches into it (:func:`test_env`), so that a build leaves its inputs — and so
  its key — as they were.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from pathlib import Path

from builder.errors import BuilderError
from builder.util import writer

__all__ = ["Limits", "SourcePolicyError", "check_tree", "excluded", "git_env", "prune",
           "test_env", "tree_size"]


def test_env(step_env: Mapping[str, str]) -> dict[str, str]:
    """A test step's environment: no ``__pycache__`` or ``.pytest_cache`` written into
    the source tree (the recipe's own settings win; the shell's ``PYTEST_ADDOPTS`` does
    not reach a step: see builder.resolve.stepenv)."""
    return {"PYTHONDONTWRITEBYTECODE": "1", "PYTEST_ADDOPTS": "-p no:cacheprovider",
            **step_env}


# -- containment --------------------------------------------------------------------------

class SourcePolicyError(BuilderError):
    """A source tree holds something builder refuses to build from (exit 4 before a
    build; a fetched tree's is a failed fetch step)."""

    exit_code = 4


def excluded(rel: str, globs: Sequence[str]) -> bool:
    """Is the path ``rel`` (relative to the source root, ``/``-separated) left out by one
    of ``globs``: matched itself, or below a folder that is (``fnmatch``: ``*`` matches
    across ``/``)."""
    if not globs:
        return False
    parts = rel.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return any(fnmatchcase(p, g.rstrip("/")) for g in globs for p in prefixes)


def prune(root: Path, globs: Sequence[str]) -> list[str]:
    """Remove the excluded paths below ``root`` (a fetched tree builder owns); returns
    them, relative."""
    gone: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if excluded(rel, globs):
                gone.append(rel)
                writer.remove(p)  # a link is removed, never followed
        dirnames[:] = [d for d in dirnames if (Path(dirpath) / d).is_dir()]
    return gone


def check_tree(root: Path, what: str = "source", exclude: Sequence[str] = ()) -> None:
    """Refuse links that resolve outside ``root`` and special files, naming the first.
    Version-control metadata and the ``exclude`` globs are not looked into."""
    base = os.path.realpath(root)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".git", ".hg", ".svn")]
        for name in [*dirnames, *filenames]:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if excluded(rel, exclude):
                if name in dirnames:
                    dirnames.remove(name)
                continue
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                target = os.path.realpath(p)
                if target != base and not target.startswith(base + os.sep):
                    raise SourcePolicyError(
                        f"{what} {root}: refusing {rel} -> {os.readlink(p)}: the link "
                        f"resolves outside the source tree ({target}); builder never builds "
                        f"from files outside it\n  fix: if the build does not need it, leave "
                        f"it out with `exclude: [\"{rel}\"]` under source: (or delete it with "
                        f"a patch); else replace the link with the file it points to")
            elif not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                raise SourcePolicyError(
                    f"{what} {root}: refusing {rel}: a special file (FIFO, socket or "
                    f"device) is not source\n  fix: remove it from the source tree")


# -- limits -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Limits:
    """How long a fetch may take and how much it may bring in."""

    timeout: float = 1800.0  # seconds per fetch (git clone, download, extraction)
    max_size: int = 8 * 2**30  # bytes downloaded, and bytes extracted or cloned
    max_files: int = 500_000  # archive members

    @staticmethod
    def from_env(environ: Mapping[str, str]) -> Limits:
        """``BUILDER_FETCH_TIMEOUT`` (seconds) and ``BUILDER_FETCH_MAX_SIZE`` (a size such
        as 2GiB) override the defaults."""
        from builder.errors import UsageError
        from builder.recipe.validate import parse_size

        limits = Limits()
        text = environ.get("BUILDER_FETCH_TIMEOUT", "").strip()
        if text:
            try:
                t = float(text)
            except ValueError:
                t = -1
            if not 1 <= t <= 7 * 86400:
                raise UsageError(f"BUILDER_FETCH_TIMEOUT={text!r}: give seconds, 1 to 604800")
            limits = replace(limits, timeout=t)
        text = environ.get("BUILDER_FETCH_MAX_SIZE", "").strip()
        if text:
            try:
                size = parse_size(text)
            except ValueError:
                size = 0
            if size < 2**20:
                raise UsageError(f"BUILDER_FETCH_MAX_SIZE={text!r}: give a size of at least "
                                 f"1MiB, such as 2GiB")
            limits = replace(limits, max_size=size)
        return limits


def tree_size(root: Path) -> int:
    total = 0
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            with contextlib.suppress(OSError):
                total += os.lstat(Path(dirpath) / name).st_size
    return total


def git_env() -> dict[str, str]:
    """git never waits for a password on a terminal, and gives up on a stalled transfer
    (less than 1 KB/s for 60 s) instead of waiting forever."""
    return {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "SSH_ASKPASS": "true",
            "GIT_SSH_COMMAND": "ssh -o BatchMode=yes -o ConnectTimeout=30",
            "GIT_HTTP_LOW_SPEED_LIMIT": "1000", "GIT_HTTP_LOW_SPEED_TIME": "60"}
