"""Dependency files for compiles whose build tool keeps no record builder reads.

A CMake build leaves Ninja's deps log; setuptools, ``torch.utils.cpp_extension``,
scikit-build-core's inner Ninja (which deletes each depfile once read) and xmake leave
nothing builder can read after the build.  Their compiles all run through the memory
launcher, so with ``$BUILDER_DEPFILE_DIR`` set (by the build step of a Python or xmake
variant) the launcher makes each compile leave a depfile in that folder
(:func:`with_depfile`):

* a compile that asks for no depfile gets ``-MD -MF <folder>/<name>.d`` (gcc, clang,
  nvcc and hipcc all take them);
* a compile that writes its own (``-MF x.d``, ``-MD`` next to ``-o``, nvcc's
  ``--dependency-output``) keeps it where its build tool wants it; the launcher copies it
  into the folder once the compile succeeded, before the build tool reads (and may
  delete) it.  ``-MMD`` becomes ``-MD``: system headers are inputs too;
* a compile it cannot name a depfile for (several sources, ``-MD`` without ``-o``)
  leaves ``<name>.unknown``: the record of that build is not complete, and the variant is
  keyed by its whole source folders.

``<name>`` is derived from the compile's folder and output, so a recompile replaces its
own depfile and the folder holds one per object — the ones compiled by earlier builds
too, which an incremental build does not recompile.  ``<name>.cwd`` holds, first, the
folder the compile ran in (a depfile's relative paths are relative to it), then the
command.  A compiler probe whose output goes to ``/dev/null`` is left alone.  The first
launcher makes :data:`SINCE`: an object file older than it was compiled before depfiles were
kept, and its headers are unknown (:mod:`builder.source.inputs` then records nothing).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from builder.errors import BuilderError
from builder.memory.suffixes import SOURCE_SUFFIXES
from builder.util import writer

__all__ = ["DEPFILE_DIR", "READS_DIR", "SINCE", "Depfile", "compiler_of", "finish", "start",
           "with_depfile"]

#: the environment variable naming the folder the depfiles go to
DEPFILE_DIR = "BUILDER_DEPFILE_DIR"
#: the environment variable naming the folder the Python processes of a build log their
#: reads into (builder.source.reads): a launcher takes it out of its own environment
READS_DIR = "BUILDER_READS_DIR"
#: made by the first compile that kept a depfile in the folder
SINCE = ".since"

#: compiler drivers by name: gcc, g++, cc, c++, clang(++), nvcc, hipcc — with a target
#: prefix (``x86_64-linux-gnu-g++``) or a version suffix (``g++-12``, ``clang++-18``)
_COMPILER = re.compile(r"(?:[\w.+-]*-)?(gcc|g\+\+|cc|c\+\+|clang|clang\+\+|nvcc|hipcc)"
                       r"(?:-[\d.]+)?\Z")
#: compiler caches that take the compiler as their first argument
_CACHES = ("ccache", "sccache")
#: options that make a command no compile (preprocess or list dependencies only)
_NO_COMPILE = frozenset({"-E", "-M", "-MM", "--preprocess", "--generate-dependencies",
                         "--generate-nonsystem-dependencies", "-fsyntax-only"})
_MMD = {"-MMD": "-MD",
        "--generate-nonsystem-dependencies-with-compile": "--generate-dependencies-with-compile"}
_MD = frozenset({"-MD", "--generate-dependencies-with-compile"})
_MF = ("-MF", "--dependency-output")


@dataclass(frozen=True)
class Depfile:
    """How one compile leaves its depfile in the folder."""

    argv: tuple[str, ...]  # the command to run
    name: str  # <folder>/<name>.d, .cwd, .unknown
    own: str = ""  # the compile's own depfile: copied to <name>.d after it succeeded
    unknown: str = ""  # why no depfile can be had ("" when one can)


def compiler_of(argv: list[str] | tuple[str, ...]) -> str:
    """The compiler driver's name (``g++``, ``nvcc``…) a command runs — after a compiler
    cache — or "" when it runs none."""
    i = 1 if argv and os.path.basename(argv[0]) in _CACHES else 0
    if i >= len(argv):
        return ""
    m = _COMPILER.match(os.path.basename(argv[i]))
    return m.group(1) if m else ""


def _value(argv: list[str], i: int, names: tuple[str, ...]) -> tuple[str, int] | None:
    """The value of option ``argv[i]`` if it is one of ``names`` (``-MF x``, ``-MFx``,
    ``--dependency-output=x``) and how many words it takes."""
    a = argv[i]
    for n in names:
        if a == n:
            return (argv[i + 1], 2) if i + 1 < len(argv) else None
        if a.startswith(n + "="):
            return a[len(n) + 1:], 1
        if n == "-MF" and a.startswith("-MF") and len(a) > 3:
            return a[3:], 1
    return None


def with_depfile(argv: list[str], folder: str, cwd: str) -> Depfile | None:
    """``argv`` changed so that the compile leaves a depfile in ``folder`` (see the
    module's docstring); None when it is no compile (a link, a preprocessing run, a
    version query, a program that is no compiler)."""
    if not compiler_of(argv) or not any(a in ("-c", "--compile") for a in argv[1:]) or \
            any(a in _NO_COMPILE for a in argv[1:]):
        return None
    out, own, md = "", "", False
    sources = []
    cmd: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        mf = _value(argv, i, _MF) if i else None
        if mf is not None:
            own = mf[0]
            cmd.extend(argv[i:i + mf[1]])
            i += mf[1]
            continue
        if i and a == "-o" and i + 1 < len(argv):
            out = argv[i + 1]
        elif i and a.startswith("-o") and len(a) > 2 and a != "-o":
            out = out or a[2:]
        if i and a in _MMD:
            a = _MMD[a]
        md = md or (bool(i) and a in _MD)
        if i and a.endswith(SOURCE_SUFFIXES) and not a.startswith("-") and \
                argv[i - 1] not in ("-o", "-MT", "-MQ", "-include", "-x"):
            sources.append(a)
        cmd.append(a)
        i += 1
    if "/dev/null" in (out, own):
        return None  # a probe of the compiler (xmake's flag checks): its output is dropped
    name = hashlib.sha256(f"{cwd}\0{out or ' '.join(sources)}".encode()).hexdigest()[:24]
    if len(sources) != 1:
        return Depfile(tuple(argv), name, unknown=f"{len(sources)} sources in one compile")
    if own:
        return Depfile(tuple(cmd), name, own=own)
    if md:
        if not out or compiler_of(argv) in ("nvcc", "hipcc"):
            return Depfile(tuple(argv), name, unknown="-MD without -MF or -o")
        return Depfile(tuple(cmd), name, own=os.path.splitext(out)[0] + ".d")
    return Depfile((*cmd, "-MD", "-MF", str(Path(folder) / f"{name}.d")), name)


def start(dep: Depfile, folder: str, cwd: str) -> None:
    """Before the compile: the folder, its :data:`SINCE` mark (made once, before the first
    object compiled with a depfile) and the compile's working folder."""
    base = Path(folder)
    writer.make_dirs(base)
    if not (base / SINCE).exists():
        writer.write_text(base / SINCE, "", sync=False)
    # the folder first (what a reader needs), then the command (for a person)
    writer.write_text(base / f"{dep.name}.cwd", f"{cwd}\n{shlex.join(dep.argv)}\n",
                      sync=False)
    unknown = base / f"{dep.name}.unknown"
    if dep.unknown:
        writer.write_text(unknown, f"{dep.unknown}: {' '.join(dep.argv)}\n", sync=False)
    else:  # compiled again, now with a depfile
        writer.remove(unknown)


def finish(dep: Depfile, folder: str, cwd: str, rc: int) -> None:
    """After the compile: its own depfile copied into the folder (a compile that
    succeeded without leaving the depfile it was asked for is marked unknown)."""
    if rc != 0 or not dep.own:
        return
    base = Path(folder)
    own = Path(cwd) / dep.own
    try:
        writer.copy_file(own, base / f"{dep.name}.d")
    except (OSError, BuilderError) as exc:  # none, or not a regular file: not complete
        writer.write_text(base / f"{dep.name}.unknown", f"its depfile {own}: {exc}\n",
                          sync=False)
