"""One writer: no module of builder but :mod:`builder.util.writer` calls a raw write
API (``open`` for writing, ``write_text``, ``mkdir``, ``shutil.copy``, ``os.replace``,
``unlink``…), so that every file builder writes gets the writer's guarantees (owned
places only, no links or special files, atomic).  A new raw call fails this test; the
few exceptions are listed with the reason they are not files builder persists."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "builder"
WRITER = PACKAGE / "util" / "writer.py"
#: private scratch in the temporary folder (sockets, a child's TMPDIR): never persisted,
#: never a user's path
SCRATCH = PACKAGE / "util" / "scratch.py"

#: attribute calls that write, create, move or delete (on a Path, os, shutil, tempfile)
RAW_METHODS = {"write_text", "write_bytes", "mkdir", "touch", "unlink", "rmdir", "rename",
               "symlink_to", "hardlink_to", "chmod", "extract", "extractall"}
RAW_MODULE_CALLS = {
    "os": {"replace", "rename", "remove", "unlink", "mkdir", "makedirs", "rmdir", "symlink",
           "link", "open", "chmod", "truncate"},
    "shutil": {"copy", "copy2", "copyfile", "copytree", "move", "rmtree", "copyfileobj"},
    "tempfile": {"mkdtemp", "mkstemp", "NamedTemporaryFile", "TemporaryDirectory"},
}
#: (module, what) → why it may stay raw.  Kernel interfaces and reads, not files.
ALLOWED = {
    ("builder/memory/cgroup.py", "open"): "cgroup control files under /sys/fs/cgroup",
    ("builder/memory/cgroup.py", "mkdir"): "a cgroup is made by mkdir in /sys/fs/cgroup",
    ("builder/memory/cgroup.py", "rmdir"): "a cgroup is removed by rmdir in /sys/fs/cgroup",
    ("builder/memory/jobgroup.py", "open"): "cgroup control files under /sys/fs/cgroup",
    ("builder/memory/jobgroup.py", "mkdir"): "a cgroup is made by mkdir in /sys/fs/cgroup",
    ("builder/memory/jobgroup.py", "rmdir"): "a cgroup is removed by rmdir in /sys/fs/cgroup",
    ("builder/source/fetch.py", "extractall"): "tar members, checked one by one and with "
    "tarfile's 'data' filter, into the fresh partial folder the writer made (make_dirs)",
}


def _write_mode(call: ast.Call, index: int = 1) -> bool:
    """``open(path, mode)`` (``Path.open(mode)``: ``index`` 0) with a mode that writes (a
    computed mode counts as writing)."""
    mode: ast.expr | None = call.args[index] if len(call.args) > index else None
    for kw in call.keywords:
        if kw.arg == "mode":
            mode = kw.value
    if mode is None:
        return False
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return any(c in mode.value for c in "wax+")
    return True


def raw_writes(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id == "open" and _write_mode(node):
            out.append((node.lineno, "open"))
        elif isinstance(f, ast.Attribute):
            base = f.value.id if isinstance(f.value, ast.Name) else ""
            if base in ("writer", "fetch"):  # the writer; builder.source.fetch's extract
                continue
            if base in RAW_MODULE_CALLS:
                if f.attr in RAW_MODULE_CALLS[base]:
                    out.append((node.lineno, f"{base}.{f.attr}" if f.attr != "open"
                                else "os.open"))
            elif f.attr in RAW_METHODS:
                out.append((node.lineno, f.attr))
            elif f.attr == "open" and node.args and isinstance(node.args[0], ast.Constant) \
                    and _write_mode(node, 0):  # Path.open("w"); z.open(info) reads
                out.append((node.lineno, "open"))
    return out


def test_no_module_but_the_writer_writes() -> None:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in (WRITER, SCRATCH):
            continue
        rel = path.relative_to(REPO).as_posix()
        for line, what in raw_writes(path):
            if (rel, what.removeprefix("os.")) in ALLOWED:
                continue
            bad.append(f"{rel}:{line}: {what} (use builder.util.writer)")
    assert not bad, "raw writes outside the writer:\n" + "\n".join(bad)


def test_the_scan_sees_raw_writes(tmp_path: Path) -> None:
    """The check is live: each kind of raw write is found."""
    src = tmp_path / "m.py"
    src.write_text("import os, shutil\nfrom pathlib import Path\n"
                   "open('x', 'w')\nPath('x').write_text('a')\nos.replace('a', 'b')\n"
                   "shutil.copytree('a', 'b')\nPath('d').mkdir()\nopen('x')\n"
                   "p = Path('y')\nwith p.open('a') as f: pass\n", encoding="utf-8")
    found = [w for _, w in raw_writes(src)]
    assert found == ["open", "write_text", "os.replace", "shutil.copytree", "mkdir", "open"]
