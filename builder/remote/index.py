"""Publishing wheels to a Python package index (``builder publish --index URL``).

The wheels are the ones the plan's wheel steps made (up-to-date variants only).  They
are checked with ``twine check`` and uploaded with ``twine upload``.  Credentials never
travel on a command line or into a log: twine reads ``TWINE_USERNAME`` /
``TWINE_PASSWORD`` from the environment builder inherits (the runner logs only the
variables it *changes*), or asks the system keyring; a URL with a password in it is
refused.  An upload is bounded (``BUILDER_INDEX_TIMEOUT``, a line while it waits), and
SIGTERM or Ctrl-C stops twine with builder.  A wheel the index would refuse (a
``linux_<arch>`` tag: its step says why it was not repaired) is refused here first, with
that reason.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from builder.errors import BuilderError, UsageError
from builder.plan.model import CACHED, SKIP, BuildPlan
from builder.plan.payloads import WheelBuild
from builder.workspace.paths import Workspace

__all__ = ["PROGRESS_EVERY", "TIMEOUT", "UNFIT", "IndexError_", "check_url", "collect",
           "explain", "publish", "timeout", "upload", "waiting"]

UNFIT = re.compile(r"-linux_[a-z0-9_]+\.whl$")


class IndexError_(BuilderError):  # noqa: N801 - IndexError is a builtin
    """The index is down, refuses the credentials or the upload."""

    exit_code = 6

    def __init__(self, url: str, why: str, fix: str) -> None:
        self.url, self.why, self.fix = url, why, fix
        super().__init__(f"index {url}: {why}")

    def render(self) -> str:
        return f"error: index {self.url}: {self.why}\n  fix: {self.fix}"


def check_url(url: str) -> str:
    """The upload URL, or a UsageError for one twine cannot use or that holds a secret."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--index {url!r}: expected an http(s) URL such as "
                         f"https://upload.pypi.org/legacy/ or http://127.0.0.1:8080/")
    if parts.password is not None or parts.username is not None:
        raise UsageError("--index: the URL holds credentials; remove them and set "
                         "TWINE_USERNAME / TWINE_PASSWORD (or store them in the keyring) — "
                         "a URL is printed and logged, a password must not be")
    return url


def collect(plan: BuildPlan) -> list[Path]:
    """The finished wheels of the plan's up-to-date variants, one per file name."""
    from builder.wheels.repair import find

    not_built = [v.id for v in plan.variants if v.status not in (CACHED, SKIP)
                 and any(s.kind == "wheel" for s in plan.steps_of(v.id))]
    if not_built:
        raise UsageError(f"not built yet: {', '.join(not_built)}; run `builder build` with "
                         f"the same selection first, then publish")
    seen: dict[str, tuple[Path, str]] = {}
    for s in plan.steps:
        w = s.payload
        if not isinstance(w, WheelBuild) or s.status == SKIP:
            continue
        whl = find(w)
        if whl is None:
            raise UsageError(f"{s.id}: no wheel in {w.out_dir}; rebuild it with "
                             f"`builder build` (remove that folder first)")
        if UNFIT.search(whl.name):
            raise UsageError(f"{whl.name}: {w.note}" + (f"\n  fix: {w.fix}" if w.fix else ""))
        digest = hashlib.sha256(whl.read_bytes()).hexdigest()
        if whl.name in seen and seen[whl.name][1] != digest:
            raise UsageError(f"two different wheels are named {whl.name} ({seen[whl.name][0]} "
                             f"and {whl}); an index keeps one file per name")
        seen.setdefault(whl.name, (whl, digest))
    return [p for p, _ in seen.values()]


def explain(output: str) -> tuple[str, str]:
    """(why, fix) for a failed upload, from twine's output."""
    text = output.lower()
    creds = ("set TWINE_USERNAME and TWINE_PASSWORD to an account of that index, or store "
             "the password with `keyring set URL USERNAME`")
    if "403" in text or "401" in text or "unauthorized" in text or "forbidden" in text or \
            "credential not found" in text or "missing credentials" in text:
        return "refused the credentials (or none were given)", creds
    if any(m in text for m in ("connection refused", "max retries", "failed to establish",
                               "name or service not known", "timed out")):
        return "cannot be reached", "start the index or check the URL"
    if "409" in text or "already exist" in text:
        return "already holds a different file of that name", \
            "bump the recipe's package.version (an index never replaces a file)"
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    return f"upload failed: {lines[-1] if lines else 'no output'}", \
        "run twine upload --verbose by hand to see more"


def publish(plan: BuildPlan, ws: Workspace, url: str, runner: Any,
            say: Callable[[str], None]) -> int:
    """Check and upload the plan's wheels to ``url``; returns how many were sent."""
    check_url(url)
    wheels = collect(plan)
    if not wheels:
        raise UsageError("no wheels to publish: the selected recipes list no python.versions")
    return upload(wheels, url, ws.logs / "publish_index.log", ws.state, runner, say)


def upload(wheels: list[Path], url: str, log: Path, cwd: Path, runner: Any,
           say: Callable[[str], None]) -> int:
    """``twine check`` then ``twine upload`` of ``wheels``, bounded by :func:`timeout`,
    saying every :data:`PROGRESS_EVERY` seconds that it still waits."""
    import importlib.util

    from builder.errors import StepFailed
    from builder.remote.conan import checked

    if importlib.util.find_spec("twine") is None:
        raise UsageError("publishing to an index needs twine: pip install twine")
    from builder.util.writer import make_dirs

    make_dirs(log.parent)
    limit = timeout()
    run = checked(runner, "publish --index", cwd, {}, log, limit)
    twine_cmd = [sys.executable, "-m", "twine"]
    for w in wheels:
        say(f"  {w.name}")
    try:
        run([*twine_cmd, "--no-color", "check", *map(str, wheels)])
    except StepFailed as failed:
        raise UsageError(f"twine check refused the wheels' metadata: "
                         f"{' / '.join(failed.tail[-3:])} (log: {log})") from None
    try:
        with waiting(url, say):
            run([*twine_cmd, "--no-color", "upload", "--non-interactive",
                 "--disable-progress-bar", "--repository-url", url, *map(str, wheels)])
    except StepFailed as failed:
        if any(t.startswith("# timed out after") for t in _log_tail(log)):  # the runner's
            raise IndexError_(url, f"no upload finished within {limit} s (the index does not "
                              f"answer)", f"check that the index is up and the URL is its "
                              f"upload endpoint, or raise BUILDER_INDEX_TIMEOUT (log: {log})"
                              ) from None
        why, fix = explain("\n".join(failed.tail))
        raise IndexError_(url, why, f"{fix} (log: {log})") from None
    return len(wheels)


#: seconds an upload may take before it is stopped (``BUILDER_INDEX_TIMEOUT``)
TIMEOUT = 600
#: seconds between two "still waiting" lines
PROGRESS_EVERY = 10.0


def timeout() -> int:
    text = os.environ.get("BUILDER_INDEX_TIMEOUT", "").strip()
    if not text:
        return TIMEOUT
    if not text.isdigit() or not 1 <= int(text) <= 86400:
        raise UsageError(f"BUILDER_INDEX_TIMEOUT={text!r}: give seconds, 1 to 86400")
    return int(text)


@contextlib.contextmanager
def waiting(url: str, say: Callable[[str], None]) -> Iterator[None]:
    """A line every :data:`PROGRESS_EVERY` seconds while the index has not answered."""
    from builder.util.waiting import ticker

    with ticker(lambda t: say(f"  still waiting for {url} ({t:.0f} s)"), PROGRESS_EVERY):
        yield


def _log_tail(log: Path) -> list[str]:
    try:
        return log.read_text(encoding="utf-8", errors="replace").splitlines()[-3:]
    except OSError:
        return []
