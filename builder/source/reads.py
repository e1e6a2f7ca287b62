"""What the Python processes of a Python build read: an audit hook and its logs.

A ``build.system: python`` variant builds with ``pip wheel`` / ``python -m build`` in the
target interpreter: setup.py, pyproject.toml, a README read as ``long_description``, the
Python files copied into the wheel are all read by Python processes.  The build step puts
a folder holding :data:`HOOK` (as ``sitecustomize.py``) first on ``PYTHONPATH`` and names a
log folder in :data:`READS_DIR`; every Python process of the build then
(``sys.addaudithook``) logs to a file of its own:

* ``read <path>``: each file opened for reading (``open``, ``io.open_code`` — imports —,
  ``os.open``), made absolute, and at exit every imported module's file (extension
  modules are loaded without an ``open`` event);
* ``exec <cwd> <argv>``: each program it starts (``subprocess``, ``os.exec*``,
  ``os.posix_spawn``, ``os.system``), so that :func:`parse_logs` can tell programs whose
  reads are recorded otherwise (Python processes, the compiler wrappers, CMake with
  Ninja, Ninja) from those whose reads nobody sees (``make``, a shell, a Python run with
  ``-I``/``-E``/``-S``, which skips the hook): then the record is not complete.

The hook chains to the interpreter's own ``sitecustomize``; test steps never get it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from builder.memory.depfiles import READS_DIR
from builder.util import writer

__all__ = ["HOOK", "MERGED", "READS_DIR", "Reads", "cmake_build_dirs", "compact_logs",
           "parse_logs", "python_isolated", "unseen_program"]

#: separates the words of a logged command line (a byte no argument holds)
_SEP = "\x1f"

HOOK = '''\
"""Made by builder (builder.source.reads): log what this Python process reads and which
programs it starts, for the record of what the build read.  Chains to the interpreter's
own sitecustomize."""
import os as _os
import sys as _sys


def _builder_reads():
    folder = _os.environ.get("BUILDER_READS_DIR")
    if not folder:
        return
    import time
    _os.makedirs(folder, exist_ok=True)
    name = "%d-%d.log" % (_os.getpid(), time.time_ns())
    fd = _os.open(_os.path.join(folder, name),
                  _os.O_WRONLY | _os.O_CREAT | _os.O_APPEND | _os.O_CLOEXEC, 0o644)
    seen = set()
    getcwd, fsdecode, write, environ = _os.getcwd, _os.fsdecode, _os.write, _os.environ

    def log(line):
        if line in seen:
            return
        seen.add(line)
        try:
            write(fd, (line.replace("\\n", " ") + "\\n").encode("utf-8", "surrogateescape"))
        except OSError:
            pass

    def absolute(path):
        path = fsdecode(path)
        return path if path.startswith("/") else getcwd() + "/" + path

    def launched(env):  # a compile the memory launcher runs: its depfile has its reads
        return env is not None and "BUILDER_LAUNCHED" in env

    def hook(event, args):
        if "BUILDER_READS_DIR" not in environ:  # a launcher: not the build's own reads
            return
        try:
            if event == "open":
                path, mode, flags = args
                if path is None or isinstance(path, int):
                    return
                if isinstance(mode, str):
                    if "r" not in mode and "+" not in mode:
                        return
                elif (flags or 0) & 3 == _os.O_WRONLY:
                    return
                log("read\\t" + absolute(path))
            elif event in ("subprocess.Popen", "os.exec", "os.posix_spawn"):
                if launched(args[3] if event == "subprocess.Popen" else args[2]):
                    return
                argv = args[1]
                if isinstance(argv, (str, bytes)):
                    argv = [argv]
                words = [fsdecode(a) for a in argv] or [fsdecode(args[0])]
                if args[0] is not None:
                    words[0] = fsdecode(args[0])
                log("exec\\t" + getcwd() + "\\t" + "\\x1f".join(words))
            elif event == "os.spawn" and not launched(args[3]):
                log("exec\\t" + getcwd() + "\\t" + "\\x1f".join(fsdecode(a) for a in args[2]))
            elif event == "os.system":
                log("exec\\t" + getcwd() + "\\t/bin/sh\\x1f-c\\x1f" + fsdecode(args[0]))
        except Exception:
            log("exec\\t" + getcwd() + "\\tunreadable-" + event)

    def modules():
        if "BUILDER_READS_DIR" not in environ:
            return
        for m in list(_sys.modules.values()):
            f = getattr(m, "__file__", None)
            if isinstance(f, str):
                log("read\\t" + absolute(f))

    import atexit
    atexit.register(modules)
    _sys.addaudithook(hook)


def _chain():
    here = _os.path.dirname(_os.path.abspath(__file__))
    mine = _sys.modules.pop("sitecustomize", None)
    saved = _sys.path[:]
    _sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or ".") != here]
    try:
        import importlib
        importlib.import_module("sitecustomize")
    except ImportError:
        if mine is not None:
            _sys.modules["sitecustomize"] = mine
    finally:
        _sys.path[:] = saved


_builder_reads()
_chain()
'''

#: programs whose own reads are recorded otherwise, or read no file that shapes the build:
#: Ninja (its compiles run through the launcher), version and platform queries
_SEEN_PROGRAMS = frozenset({"ninja", "git", "uname", "ldconfig", "which", "lsb_release",
                            "nproc", "getconf"})
_PYTHON = re.compile(r"python[\d.]*\Z")
_COMPILER = re.compile(r"(?:[\w.+-]*-)?(gcc|g\+\+|cc|c\+\+|clang|clang\+\+|nvcc|hipcc)"
                       r"(?:-[\d.]+)?\Z")


@dataclass
class Reads:
    """What the logs of one build say: the files read, the programs started (cwd, argv)."""

    files: set[str] = field(default_factory=set)
    programs: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    logs: int = 0  # how many processes logged


def parse_logs(folder: Path) -> Reads:
    """Every ``*.log`` in ``folder`` (see the module's docstring); lines of another shape
    are ignored."""
    out = Reads()
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for log in sorted(folder.glob("*.log")) if folder.is_dir() else ():
        out.logs += 1
        try:
            text = log.read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            continue
        for line in text.splitlines():
            kind, _, rest = line.partition("\t")
            if kind == "read" and rest.startswith("/"):
                path = os.path.normpath(rest)
                out.files.add(path)
                source = _source_of_bytecode(path)
                if source:  # an import read the bytecode, after checking the source's stat
                    out.files.add(source)
            elif kind == "exec":
                cwd, _, words = rest.partition("\t")
                prog = (cwd, tuple(words.split(_SEP)))
                if prog not in seen:
                    seen.add(prog)
                    out.programs.append(prog)
    return out


def _source_of_bytecode(path: str) -> str:
    """``pkg/__pycache__/mod.cpython-311.pyc`` → ``pkg/mod.py`` ("" for another file): an
    import whose bytecode is current reads the bytecode only, but an edit of the source
    makes the next import read the source."""
    folder, name = os.path.split(path)
    if os.path.basename(folder) != "__pycache__" or not name.endswith(".pyc"):
        return ""
    return os.path.join(os.path.dirname(folder), name.split(".", 1)[0] + ".py")


def python_isolated(argv: Iterable[str]) -> bool:
    """Whether a Python command line skips ``sitecustomize`` or ``PYTHONPATH`` (``-I``,
    ``-E``, ``-S``, also combined: ``-IS``)."""
    args = list(argv)[1:]
    i = 0
    while i < len(args):
        a = args[i]
        if not a.startswith("-") or a in ("-", "-m", "-c") or a.startswith("--"):
            if a.startswith("--"):
                i += 1
                continue
            return False
        if a in ("-W", "-X"):
            i += 2
            continue
        letters = a[1:]
        for c in letters:
            if c in "IES":
                return True
            if c in "mcWX":  # the rest is the option's value
                return False
        i += 1
    return False


def cmake_build_dirs(programs: Iterable[tuple[str, tuple[str, ...]]]) -> set[str]:
    """The build folders of the CMake configure runs among ``programs`` (``-B dir``, or
    the folder it ran in); ``cmake --build``, ``--install``, ``-E``, ``--help`` and
    ``--version`` configure nothing."""
    out: set[str] = set()
    for cwd, argv in programs:
        if os.path.basename(argv[0]) != "cmake" or len(argv) < 2 or \
                argv[1].startswith("--") or argv[1] in ("-E", "-P"):
            continue  # --build, --install, --help, --version, -E tools: no configure
        build = cwd
        for i, a in enumerate(argv[1:], 1):
            if a == "-B" and i + 1 < len(argv):
                build = argv[i + 1]
            elif a.startswith("-B") and len(a) > 2:
                build = a[2:]
        out.add(os.path.normpath(os.path.join(cwd, build)))
    return out


def unseen_program(programs: Iterable[tuple[str, tuple[str, ...]]], wrappers: str) -> str:
    """The first program started whose reads are neither logged nor recorded otherwise
    ("" when there is none): a Python process that skips the hook, a compile that does
    not go through a compiler wrapper in ``wrappers`` (the launcher keeps its depfile),
    a program that is none of CMake (its configure inputs are in ``build.ninja``), Ninja
    and the queries of :data:`_SEEN_PROGRAMS`."""
    for _, argv in programs:
        if not argv or not argv[0]:
            return "an unreadable command"
        exe = argv[0]
        name = os.path.basename(exe)
        if _PYTHON.match(name):
            if python_isolated(argv):
                return " ".join(argv)
            continue
        if exe.startswith(wrappers.rstrip("/") + "/"):
            continue  # a compiler wrapper: the launcher keeps the compile's depfile
        if _COMPILER.match(name):
            if any(a in ("-c", "--compile") for a in argv[1:]):
                return " ".join(argv)  # a compile the launcher does not see
            continue  # a version or ABI query
        if name == "cmake":
            if "-P" in argv[1:]:
                return " ".join(argv)  # a script: what it reads is unknown
            continue
        if name not in _SEEN_PROGRAMS:
            return " ".join(argv)
    return ""


#: the one log :func:`compact_logs` leaves
MERGED = "merged.log"


def compact_logs(folder: Path) -> None:
    """The logs of ``folder`` merged into one (:data:`MERGED`), their lines kept once: the
    folder keeps what every build of the variant read (an incremental build does not
    read again what it did not redo), without a file per process for ever."""
    logs = sorted(folder.glob("*.log")) if folder.is_dir() else []
    if len(logs) <= 1 and all(p.name == MERGED for p in logs):
        return
    lines: dict[str, None] = {}
    for log in logs:
        try:
            text = log.read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            continue
        lines.update(dict.fromkeys(text.splitlines()))
    writer.write_bytes(folder / MERGED, "".join(f"{x}\n" for x in lines).encode(
        "utf-8", "surrogateescape"), sync=False)
    for log in logs:
        if log.name != MERGED:
            writer.remove(log)
