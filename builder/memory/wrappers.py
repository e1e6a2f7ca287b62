"""Compiler wrappers: small Python scripts named like the compiler they stand for (``cc``,
``c++``, ``nvcc``) that run :mod:`.launcher` with the real compiler.  Build tools that
take their compiler from ``CC``, ``CXX`` or ``PYTORCH_NVCC`` (setuptools,
``torch.utils.cpp_extension``, xmake) then compile under the broker's admission.

One module writes them and reads them back: a launcher whose compiler cache would be
handed a wrapper (CMake run by a Python build backend with both ``CXX`` naming a wrapper
and ``CMAKE_CXX_COMPILER_LAUNCHER``) gives the cache the real compiler instead — sccache
keys a compile by its compiler's binary, and sccache-dist packs that binary for the build
server, where a script starting with this machine's Python cannot run.
"""

from __future__ import annotations

import ast

__all__ = ["MARK", "real_compiler", "script"]

MARK = "# Made by builder: compile through the memory launcher (builder.memory.launcher)"


def script(python: str, command: list[str]) -> str:
    """The text of a wrapper that runs ``command`` + its own arguments through the memory
    launcher (a launcher inside a launched compile runs the compiler directly)."""
    return (f"#!{python}\n{MARK}\nimport sys\n\n"
            "from builder.memory.launcher import main\n\n"
            f"sys.exit(main({command!r} + sys.argv[1:]))\n")


def real_compiler(path: str) -> str | None:
    """The compiler the wrapper at ``path`` stands for; None when ``path`` is no wrapper
    builder wrote (a compiler, a link to one, anything unreadable)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return None
    if not head.startswith(b"#!") or MARK.encode() not in head:
        return None
    for line in head.decode("utf-8", "replace").splitlines():
        if line.startswith("sys.exit(main(") and line.endswith(" + sys.argv[1:]))"):
            try:
                command = ast.literal_eval(line[len("sys.exit(main("):-len(
                    " + sys.argv[1:]))")])
            except (ValueError, SyntaxError):
                return None
            if isinstance(command, list) and command and isinstance(command[-1], str):
                return command[-1]
    return None

