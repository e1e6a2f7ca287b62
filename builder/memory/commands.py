"""What a compiler or linker command line says about the job it runs: the file it compiles
(which names the job in the memory history), the file a link writes, and whether it
writes into something other than a regular file (a compiler cache must not see that job:
:func:`special_output`)."""

from __future__ import annotations

import os
import stat

from builder.memory.suffixes import SOURCE_SUFFIXES

__all__ = ["job_of", "output_of", "source_of", "special_output"]


def source_of(argv: list[str]) -> str | None:
    """The file a compile command compiles; None for commands that are no compile job:
    links, and preprocessing only (``-E``: a compiler cache's first pass, ~0.1 GB),
    which would otherwise teach the history a tiny peak for the file."""
    if "-E" in argv[1:]:
        return None
    for i, a in enumerate(argv[:-1]):
        if a == "-c" and argv[i + 1].endswith(SOURCE_SUFFIXES):
            return argv[i + 1]
    cands = [a for a in argv[1:] if a.endswith(SOURCE_SUFFIXES) and not a.startswith("-")]
    return cands[-1] if cands else None


def output_of(argv: list[str]) -> str | None:
    """The file a link command writes (``-o FILE``); None: not a link the broker can name."""
    for i, a in enumerate(argv[:-1]):
        if a == "-o":
            return argv[i + 1]
    return next((a[2:] for a in argv if a.startswith("-o") and len(a) > 2), None)


#: options that name a file a compile writes: its object, its depfile
_WRITES = ("-o", "-MF", "--output-file", "--dependency-output")


def special_output(argv: list[str]) -> str | None:
    """The first file the compile writes that exists and is no regular file or folder (a
    device, a FIFO, a socket, or a link to one); None when there is none.  A compiler
    writes into such a file; a compiler cache's hit would rename a file over it."""
    for i, a in enumerate(argv[1:], 1):
        for opt in _WRITES:
            if a == opt and i + 1 < len(argv):
                path = argv[i + 1]
            elif a.startswith(opt + "="):
                path = a[len(opt) + 1:]
            elif opt in ("-o", "-MF") and a.startswith(opt) and len(a) > len(opt):
                path = a[len(opt):]
            else:
                continue
            try:
                mode = os.stat(path).st_mode
            except (OSError, ValueError):
                continue  # not there (yet): the compiler makes a regular file
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                return path
    return None


def job_of(argv: list[str]) -> tuple[list[str], str | None, str]:
    """(the command, the file that names the job, its kind): ``--link`` first marks the
    launcher of a link step (``CMAKE_<LANG>_LINKER_LAUNCHER``), named by its output."""
    if argv[:1] == ["--link"]:
        cmd = argv[1:]
        return cmd, output_of(cmd), "link"
    return argv, source_of(argv), "compile"
