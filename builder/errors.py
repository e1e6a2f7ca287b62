"""The one exception hierarchy of builder.

Core code raises these; only :func:`builder.cli.main.main` prints them and turns them
into an exit status.  Each class carries its exit code, documented in the README's exit-code table:

====  =======================================================
code  meaning
====  =======================================================
0     success
1     a build step failed (compiler, test, …)
2     bad command line
3     invalid recipe or host-facts file (with file:line:col)
4     the request cannot be planned on this host (missing tool, unsupported arch…)
5     the workspace is locked by another builder process (``--no-wait``)
6     a Conan remote is not configured, cannot be reached or refuses the credentials;
      the ``--dist`` URL is no scheduler, it refuses the token, or a pool does not start
7     refused: builder would write into, replace or delete something it did not create
8     a file or folder cannot be read or written (permissions, a file where a folder
      is expected, a full disk…)
130   interrupted (Ctrl-C)
====  =======================================================
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BuilderError", "Diagnostic", "DistError", "DownloadFailed", "FetchError",
           "Interrupted", "Location",
           "LockedError", "MatrixError", "PlanError", "RecipeError", "RemoteError", "StepFailed",
           "UnsupportedError", "UsageError"]


@dataclass(frozen=True)
class Location:
    """A place in a file: 1-based line and column (0 when unknown)."""

    file: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line:
            return f"{self.file}:{self.line}:{self.col}"
        return self.file


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in an input, with where it is and how to fix it."""

    location: Location
    path: str  # dotted path inside the document, e.g. ``backends.cuda.archs[3]``
    message: str
    hint: str = ""
    source_line: str = ""  # the offending line of the file, for a caret display

    def render(self) -> str:
        head = f"{self.location}: {self.path + ': ' if self.path else ''}{self.message}"
        lines = [head]
        if self.source_line and self.location.line:
            lines.append(f"    {self.location.line:>4} | {self.source_line}")
            pad = " " * (max(self.location.col, 1) - 1)
            lines.append(f"         | {pad}^")
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        return "\n".join(lines)


class BuilderError(Exception):
    """Base class: a failure the user can act on.  Never shown as a traceback."""

    exit_code = 1

    def render(self) -> str:
        return f"error: {self}"


class UsageError(BuilderError):
    """The command line asks for something that does not exist."""

    exit_code = 2


class RecipeError(BuilderError):
    """One or more problems in recipe (or host-facts) files."""

    exit_code = 3

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = list(diagnostics)
        super().__init__(f"{len(self.diagnostics)} problem(s) in input")

    def render(self) -> str:
        body = "\n".join("error: " + d.render() for d in self.diagnostics)
        n = len(self.diagnostics)
        return f"{body}\n{n} error{'s' if n != 1 else ''} found."


class PlanError(BuilderError):
    """The request is valid but cannot be satisfied on this host."""

    exit_code = 4


class UnsupportedError(RecipeError):
    """The recipe asks for something the installed toolchain cannot do (an arch),
    located in the recipe like a recipe error but with the exit code of a plan error."""

    exit_code = 4


class LockedError(BuilderError):
    """Another builder process holds the workspace lock."""

    exit_code = 5


class StepFailed(BuilderError):
    """A build step exited non-zero: says everything needed to act on it."""

    exit_code = 1

    def __init__(self, step_id: str, argv: list[str], returncode: int, log_path: str,
                 tail: list[str], explanation: str = "") -> None:
        self.step_id = step_id
        self.argv = argv
        self.returncode = returncode
        self.log_path = log_path
        self.tail = tail
        self.explanation = explanation
        super().__init__(f"step {step_id} failed with exit code {returncode}")

    def render(self) -> str:
        import shlex

        lines = [f"error: step {self.step_id} failed (exit code {self.returncode})"]
        if self.argv:
            lines.append(f"  command: {shlex.join(self.argv)}")
        if self.explanation:
            lines.append(f"  why: {self.explanation}")
        lines.append(f"  log: {self.log_path}")
        if self.tail:
            lines.append(f"  last {len(self.tail)} lines of the log:")
            lines.extend("    " + t for t in self.tail)
        return "\n".join(lines)


class DownloadFailed(StepFailed):
    """A download from a binary remote failed: the remote could not be used
    (``unreachable``) or what came back did not match its published hashes
    (``corrupt``; the entry has been removed from the local cache)."""

    def __init__(self, step_id: str, log_path: str, explanation: str, key: str,
                 corrupt: bool = False, tail: list[str] | None = None) -> None:
        super().__init__(step_id, [], 1, log_path, tail or [], explanation)
        self.key = key
        self.corrupt = corrupt


class FetchError(BuilderError):
    """A source that cannot be fetched, verified or extracted (the step fails)."""

    exit_code = 1


class MatrixError(UsageError):
    """A session or matrix request that names something that does not exist."""


class RemoteError(BuilderError):
    """A Conan remote that is down, unknown or refuses the credentials."""

    exit_code = 6

    def __init__(self, remote: str, why: str, fix: str) -> None:
        self.remote, self.why, self.fix = remote, why, fix
        super().__init__(f"remote '{remote}': {why}")

    def render(self) -> str:
        return f"error: remote '{self.remote}': {self.why}\n  fix: {self.fix}"


class DistError(BuilderError):
    """The distributed-compilation pool (sccache-dist) cannot be used as asked: a URL that
    is no scheduler, a token it refuses, a pool that does not start in time."""

    exit_code = 6

    def __init__(self, where: str, why: str, fix: str) -> None:
        self.where, self.why, self.fix = where, why, fix
        super().__init__(f"{where}: {why}")

    def render(self) -> str:
        return f"error: {self.where}: {self.why}\n  fix: {self.fix}"


class InputFileError(BuilderError):
    """A file the user gave builder (a lockfile, a host-facts file) is not what it should
    be: wrong encoding, not JSON, or the wrong shape.  Exit code 3, like a bad recipe."""

    exit_code = 3

    def __init__(self, path: str, problem: str, fix: str) -> None:
        self.path, self.problem, self.fix = path, problem, fix
        super().__init__(f"{path}: {problem}")

    def render(self) -> str:
        return f"error: {self.path}: {self.problem}\n  fix: {self.fix}"


class OwnershipError(BuilderError):
    """builder was about to write into, replace or delete something it did not create
    (a folder that is not builder's, a state folder that is not one).  Nothing was
    touched."""

    exit_code = 7

    def __init__(self, path: str, reason: str, fix: str) -> None:
        self.path, self.reason, self.fix = path, reason, fix
        super().__init__(f"refusing to touch {path}: {reason}")

    def render(self) -> str:
        return f"error: refusing to touch {self.path}: {self.reason}\n  fix: {self.fix}"


class FileSystemError(BuilderError):
    """An operating-system error on a path (permission denied, a file where a folder is
    expected, no space left…), with the path and what to do."""

    exit_code = 8

    def __init__(self, path: str, problem: str, fix: str) -> None:
        self.path, self.problem, self.fix = path, problem, fix
        super().__init__(f"{path}: {problem}")

    def render(self) -> str:
        return f"error: {self.path}: {self.problem}\n  fix: {self.fix}"

    @staticmethod
    def of(exc: OSError, doing: str = "") -> FileSystemError:
        """An :class:`OSError` as an error naming its path and a fix."""
        import errno

        path = str(exc.filename or "?")
        what = exc.strerror or str(exc)
        fixes = {
            errno.EACCES: "check the permissions of the path (or pick another folder with "
                          "--state-dir)",
            errno.EPERM: "check the permissions of the path",
            errno.EROFS: "the file system is read-only: pick a writable folder (--state-dir)",
            errno.ENOSPC: "free disk space (`builder cache prune`) or use another disk",
            errno.EDQUOT: "free disk space or raise the quota",
            errno.ENOTDIR: "a file stands where a folder is expected: move the file away",
            errno.EISDIR: "a folder stands where a file is expected: name a file instead",
            errno.EEXIST: "move the existing file or folder away",
            errno.ENAMETOOLONG: "use a shorter path",
            errno.ELOOP: "a symbolic link loops: fix or remove it",
        }
        fix = fixes.get(exc.errno or 0, "check that the path exists and is usable")
        return FileSystemError(path, f"{doing + ': ' if doing else ''}{what}", fix)


class Interrupted(BuilderError):
    exit_code = 130
