"""A git or url source fetched into a partial folder, checked against the source policy,
marked and renamed into the workspace's sources; a local folder with patches or
``exclude`` globs copied the same way, then kept in step with the folder (only what
differs rewritten)."""

from __future__ import annotations

import os
import shutil
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path

from builder.errors import FetchError, StepFailed
from builder.execute.host import StepHost
from builder.plan.model import Step
from builder.plan.payloads import FetchSource
from builder.util import writer
from builder.util.files import replace_dir, sync_tree
from builder.util.secrets import redact, reveal
from builder.util.waiting import ticker

__all__ = ["fetch"]


def fetch(ex: StepHost, step: Step) -> None:
    from builder.source import fetch, policy

    src = step.payload
    assert isinstance(src, FetchSource)
    dest, partial = Path(src.dest), Path(src.partial)
    if fetch.is_fetched(dest) and (src.kind != "path" or
                                   fetch.read_marker(dest).get("sha256") == src.sha256):
        return
    writer.remove(partial)
    limits = policy.Limits.from_env(os.environ)  # one time and size cap per fetch
    try:
        if src.kind == "path":  # a patched (or excluding) local folder: builder's copy
            _copy_path(src, partial)
        if src.kind == "url":
            archive = dest.with_name(dest.name + ".download")
            try:
                # the URL with its token, read in this process only (never an argv)
                fetch.download(reveal(src.credential) if src.credential else src.location,
                               archive, src.sha256, limits,
                               progress=lambda line: ex.progress(step, line))
                fetch.extract(archive, partial, limits, src.location)
            finally:
                writer.remove(archive)
            fetch.strip_single_top(partial)
        timeout = int(min(step.timeout or limits.timeout, limits.timeout))
        env = (*step.env, *policy.git_env().items(), *fetch.git_transport_env().items())
        cut = len(step.commands) - src.patches  # the checkout, then the patches
        try:
            with _still_waiting(ex, step, step.commands[:cut], timeout):
                ex.commands(replace(step, timeout=timeout, env=env,
                                    commands=step.commands[:cut]))
            policy.prune(partial, src.exclude)  # excluded: gone before the patches apply
            ex.commands(replace(step, timeout=timeout, env=env, commands=step.commands[cut:]))
        except StepFailed as failed:
            if "patch" in Path(failed.argv[0]).name:
                failed.explanation = "a patch does not apply cleanly to this source"
            raise
        marker: dict[str, object] = {"kind": src.kind, "location": src.location,
                                     "rev": src.rev, "sha256": src.sha256}
        if src.kind == "git":
            marker["commit"] = _checked_commit(ex, step, src, partial)
            marker["resolved"] = resolved_at()
        if policy.tree_size(partial) > limits.max_size:
            raise FetchError(f"{src.location}: larger than the fetch size "
                                   f"cap ({limits.max_size} bytes); raise "
                                   f"BUILDER_FETCH_MAX_SIZE if it is expected")
        policy.check_tree(partial, src.location)  # links out, special files
        _place(src, partial, dest, marker)
    except (FetchError, policy.SourcePolicyError) as exc:
        failed_log = ex.log_path(step)
        with writer.open_stream(failed_log, append=True) as f:  # the log the error names
            f.write(redact(f"# fetch failed: {exc}\n"))
        said = redact(str(exc))
        raise StepFailed(step.id, [], 1, str(failed_log), [said], said) from None
    finally:
        writer.remove(partial)


def _place(src: FetchSource, partial: Path, dest: Path, marker: dict[str, object]) -> None:
    """The checked tree in place, marked.  Builder's copy of a local folder stays where it
    is, so that the build folder that follows it recompiles only what changed: what
    differs is rewritten, and the marker comes last (a copy cut short has none, and is
    made again)."""
    from builder.source import fetch

    if src.kind == "path" and dest.is_dir():
        writer.remove(dest / fetch.MARKER)
        sync_tree(partial, dest)
        fetch.write_marker(dest, marker)
    else:
        fetch.write_marker(partial, marker)
        replace_dir(partial, dest)


def _still_waiting(ex: StepHost, step: Step, commands: tuple[tuple[str, ...], ...],
                   timeout: int) -> AbstractContextManager[None]:
    """Lines saying the checkout (``git clone: still waiting (30 s of 1800 s)``) goes on."""
    first = commands[0] if commands else ()
    what = " ".join(Path(a).name if i == 0 else a for i, a in enumerate(first[:2])) or "fetch"
    return ticker(lambda t: ex.progress(step, f"{what}: still waiting ({t:.0f} s of "
                                              f"{timeout} s)"))


def _copy_path(src: FetchSource, partial: Path) -> None:
    """A local folder copied (links as links), without the ``exclude`` globs' paths."""
    from builder.source import policy
    from builder.source.digest import SKIP_DIRS

    skip = shutil.ignore_patterns(*SKIP_DIRS, "*.egg-info")
    root = Path(src.location)

    def ignore(folder: str, names: list[str]) -> set[str]:
        rel = Path(folder).relative_to(root).as_posix()
        return set(skip(folder, names)) | {
            n for n in names if policy.excluded(n if rel == "." else f"{rel}/{n}",
                                                src.exclude)}

    writer.copy_tree(src.location, partial, ignore=ignore)


def _checked_commit(ex: StepHost, step: Step, src: FetchSource, partial: Path) -> str:
    """The commit the clone checked out: the pinned one, or what a branch or tag (allowed
    with allow_branch) resolved to now, which the log records."""
    from builder.recipe.semantic import is_full_rev
    from builder.util.runner import capture

    rc, out = capture(["git", "-C", str(partial), "rev-parse", "HEAD"])
    head, rev = out.strip(), src.rev
    branch = not is_full_rev(rev)  # opted in with allow_branch
    if rc != 0 or not is_full_rev(head) or (head != rev and not branch):
        raise FetchError(f"{src.location}: checked out {head!r}, expected {rev}")
    if branch:
        with writer.open_stream(ex.log_path(step), append=True) as log:
            log.write(f"# {rev} resolved to commit {head}\n")
    return head


def resolved_at() -> str:
    """When a branch was resolved (UTC), recorded in the fetched tree's marker."""
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
