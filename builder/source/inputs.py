"""The inputs a build really read, taken from the build tool's own dependency record, and
their verification by content.

After a CMake variant is built, :func:`take_record` collects every file the build tool
knows the build read:

* Ninja's deps log (``ninja -t deps``: the headers each compile included, as the
  compilers' depfiles said — a header anywhere on disk is there, e.g. one reached
  through ``include_directories(../common)``);
* every input of every edge in ``build.ninja`` and the files it includes (sources,
  custom commands' inputs, and CMake's configure inputs: the files the ``RERUN_CMAKE``
  edge depends on — CMakeLists.txt, included ``.cmake`` files, ``configure_file``
  templates);
* the depfiles (``*.d``) ninja reads itself rather than logging;
* the files the install rules copy (absolute paths named in ``cmake_install.cmake``) and
  those the recipe's ``install.files`` patterns match;
* the files of the source folders that the project's CMake files name (what
  ``file(READ ...)`` reads at configure time is no configure input of CMake's).

A Python or xmake build leaves no such record: :mod:`builder.source.launched` gathers
what it read instead (the memory launcher's depfiles, the Python processes' logged
reads), and :func:`take_record` keeps those the same way.

Of these, the regular files outside builder's own folders are kept with their
(size, mtime_ns, ctime_ns, inode) and sha256, plus a digest of the set of file names in each
source tree (so that a new file — a glob's new match, a header that now shadows
another — is noticed).  :func:`verify` checks a record against the disk: stat first,
hashing only a file whose stat changed (through :class:`~builder.source.digest.StatCache`).
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import stat
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.source.digest import StatCache
from builder.util.runner import capture

__all__ = ["EDITED", "Input", "Verdict", "build_ninja_inputs", "cmake_mentions",
           "depfile_inputs", "glob_files", "install_rule_inputs", "mapped_path", "mentions",
           "ninja_deps", "parse_record", "prerequisites", "take_record", "verify"]

#: (path, size, mtime_ns, ctime_ns, inode, sha256): the ctime too, since an in-place
#: rewrite that restores the mtime (``touch -r``) cannot restore it
Input = tuple[str, int, int, int, int, str]
#: the sha256 recorded for a file edited while the build ran: matches no content
EDITED = "edited-during-the-build"
#: a file changed this recently may change again within the same timestamp tick
_RACY_SECONDS = 2.0

_ABS_QUOTED = re.compile(r'"(/[^"]+)"')
#: a word of a CMake file that may name a file (``VERSION``, ``/data/table.txt``)
_PATH_WORD = re.compile(r"[A-Za-z0-9_+/.-]+")
#: a ``file(INSTALL ...)`` command of an install script, up to its closing parenthesis
_FILE_INSTALL = re.compile(r'file\(INSTALL\b((?:[^()"]|"[^"]*")*)\)', re.S)


@dataclass(frozen=True)
class Verdict:
    """What :func:`verify` found: ``ok`` when every recorded file and every name set is
    unchanged; otherwise ``current`` digests what is there now (a conservative key's
    part)."""

    ok: bool
    current: str
    changed: str = ""  # the first thing found changed: a file, or a folder's file names


def ninja_deps(ninja: str, build: Path) -> set[str] | None:
    """The files ``ninja -t deps`` lists (the headers each compile read); None when
    ninja cannot say (then no record is complete)."""
    if not (build / "build.ninja").is_file():
        return None
    rc, out = capture([ninja, "-C", str(build), "-t", "deps"], timeout=300)
    if rc != 0:
        return None
    return {line.strip() for line in out.splitlines()
            if line.startswith((" ", "\t")) and line.strip()}


def _ninja_lines(text: str) -> Iterable[str]:
    """Logical lines of a ninja file (``$`` + newline continues a line)."""
    buf = ""
    for raw in text.splitlines():
        if raw.endswith("$") and not raw.endswith("$$"):
            buf += raw[:-1]
            continue
        yield buf + raw
        buf = ""
    if buf:
        yield buf


def _ninja_paths(text: str) -> list[str]:
    """The paths of a space separated ninja path list (``$ ``, ``$:``, ``$$`` escapes)."""
    out, cur, i = [], "", 0
    while i < len(text):
        c = text[i]
        if c == "$" and i + 1 < len(text):
            cur += {" ": " ", ":": ":", "$": "$"}.get(text[i + 1], "$" + text[i + 1])
            i += 2
            continue
        if c == " ":
            if cur:
                out.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    if cur:
        out.append(cur)
    return out


def build_ninja_inputs(build: Path) -> set[str]:
    """Every input (explicit, implicit, order-only) of every edge in ``build.ninja`` and
    in the files it includes; relative paths are made absolute against ``build``."""
    out: set[str] = set()
    todo, seen = [build / "build.ninja"], set()
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in _ninja_lines(text):
            if line.startswith(("include ", "subninja ")):
                todo.extend(build / p for p in _ninja_paths(line.split(" ", 1)[1]))
            elif line.startswith("build "):
                rest = line[len("build "):]
                # the first unescaped ':' ends the outputs
                m = re.search(r"(?<!\$):", rest)
                if m is None:
                    continue
                parts = _ninja_paths(rest[m.end():])
                inputs = [p for p in parts[1:] if p not in ("|", "||", "|@")]
                out.update(p if os.path.isabs(p) else str(build / p) for p in inputs)
    return out


def prerequisites(text: str) -> list[str]:
    """The prerequisites of a make-style depfile, as written (``\\ `` unescaped)."""
    out: list[str] = []
    text = text.replace("\\\n", " ")
    for line in text.splitlines():
        m = re.search(r"(?<!\\):(\s|$)", line)
        if m is None:
            continue
        out.extend(raw.replace("\\ ", " ")
                   for raw in re.split(r"(?<!\\)\s+", line[m.end():].strip()) if raw)
    return out


def depfile_inputs(build: Path) -> set[str]:
    """The prerequisites of every make-style depfile (``*.d``) below ``build``."""
    out: set[str] = set()
    for d in build.rglob("*.d"):
        try:
            text = d.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        out.update(p if os.path.isabs(p) else str(d.parent / p) for p in prerequisites(text))
    return out


def install_rule_inputs(build: Path) -> set[str]:
    """What the install scripts (``cmake_install.cmake``) copy: the absolute paths after
    ``FILES`` in each ``file(INSTALL ...)`` — ``install(FILES|DIRECTORY|TARGETS ...)``
    of the source tree and of the build."""
    out: set[str] = set()
    for f in build.rglob("cmake_install.cmake"):
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for m in _FILE_INSTALL.finditer(text):
            _, _, files = m.group(1).partition(" FILES")
            out.update(_ABS_QUOTED.findall(files))
    return out


def cmake_mentions(files: Iterable[str], roots: Sequence[str]) -> set[str]:
    """The files of the source folders that the project's CMake files (among ``files``)
    name: what ``file(READ|STRINGS ...)`` or a script reads at configure time is not
    among CMake's configure inputs, but its name is in the CMake file (``VERSION``,
    ``${CMAKE_CURRENT_SOURCE_DIR}/data/table.txt``).  Each word that looks like a path is
    tried below the CMake file's folder and below each source folder."""
    return mentions(files, roots, (".cmake", "/CMakeLists.txt"))


def mentions(files: Iterable[str], roots: Sequence[str], suffixes: tuple[str, ...]
             ) -> set[str]:
    """The files of the source folders that the build scripts among ``files`` (those
    ending in one of ``suffixes`` and lying in a source folder) name
    (:func:`cmake_mentions`; xmake's ``*.lua`` alike)."""
    out: set[str] = set()
    roots = [r.rstrip("/") for r in roots]
    for f in files:
        if not (f.endswith(suffixes) and any(f.startswith(r + "/") for r in roots)):
            continue
        try:
            text = Path(f).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        bases = [os.path.dirname(f), *roots]
        for word in set(_PATH_WORD.findall(text)):
            rel = word.lstrip("/")
            if not rel:
                continue
            for base in bases:
                cand = os.path.normpath(os.path.join(base, rel))
                if any(cand.startswith(r + "/") for r in roots) and os.path.isfile(cand):
                    out.add(cand)
    return out


def glob_files(patterns: Sequence[str]) -> set[str]:
    out: set[str] = set()
    for pat in patterns:
        for m in (glob.glob(pat, recursive=True) if glob.has_magic(pat) else [pat]):
            if os.path.isdir(m):
                for dirpath, _, names in os.walk(m):
                    out.update(os.path.join(dirpath, n) for n in names)
            else:
                out.add(m)
    return out


def _owned(path: str, owned: Sequence[str]) -> bool:
    return any(path == o or path.startswith(o.rstrip("/") + "/") for o in owned)


def take_record(ninja: str, build: Path, owned: Sequence[str], collected: Sequence[str],
                names: Mapping[str, str], cache: StatCache | None = None,
                planned: Mapping[str, tuple[int, int, int, int, str]] | None = None,
                read: set[str] | None = None,
                mapped: Sequence[tuple[str, str]] = ()) -> dict[str, Any] | None:
    """The record of what the build at ``build`` read (see the module's docstring):
    ``{"inputs": [[path, size, mtime_ns, ctime_ns, inode, sha256], ...],
    "names": [[root, digest]]}``.
    ``owned``: builder's folders (never inputs: what is there is keyed by builder);
    ``collected``: the ``install.files`` patterns (absolute); ``names``: each source
    tree's name digest when the build was planned; ``planned``: the digest cache as the
    plan read the source folders — a file whose identity changed since was edited while
    the build ran, and is recorded as changed (the next build rebuilds it), since what
    the build saw of it is unknown; ``read``: what a build driven by pip or xmake read
    (:func:`builder.source.launched.launched_inputs`), else the build is CMake's;
    ``mapped``: (builder's copy, the user's folder) of a CMake build of a copy.  None
    when Ninja's deps log cannot be read: a record without the headers would not be
    complete (the install is then keyed conservatively, by the whole source folders)."""
    cache = cache or StatCache(dict(planned or {}))
    planned = planned or {}
    if read is None:
        deps = ninja_deps(ninja, build)
        if deps is None:
            return None
        # a folder the install rules or install.files copy: every file in it is an input
        paths = deps | build_ninja_inputs(build) | depfile_inputs(build) | \
            glob_files([*install_rule_inputs(build), *collected])
        if mapped:  # a build of builder's copy: what it read of it is the user's files
            paths = {m for p in paths if "\0" not in p and
                     (m := mapped_path(os.path.normpath(p), mapped))}
        paths |= cmake_mentions(paths, list(names))
    else:
        paths = read
    real_owned = [os.path.realpath(o) for o in owned] + list(owned)
    inputs: list[list[Any]] = []
    for p in sorted({os.path.normpath(x) for x in paths if "\0" not in x}):
        if _owned(p, real_owned) or _owned(os.path.realpath(p), real_owned) or \
                p.startswith(_SYSTEM):
            continue
        try:
            st = os.stat(p)
        except OSError:
            continue  # a phony or a file that was removed: not read by this build
        if not stat.S_ISREG(st.st_mode):
            continue
        before = planned.get(p)
        edited = before is not None and \
            tuple(before[:4]) != (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        # a file changed this recently could change again within the same timestamp tick:
        # its stat is not trusted (mtime -1 matches nothing), its content is checked
        racy = time.time() - max(st.st_mtime, st.st_ctime) <= _RACY_SECONDS
        inputs.append([p, st.st_size, -1 if racy else st.st_mtime_ns, st.st_ctime_ns,
                       st.st_ino, EDITED if edited else cache.sha256(Path(p), st)])
    return {"inputs": inputs, "names": sorted([k, v] for k, v in names.items())}


#: kernel and device interfaces a process opens, and builder's own code (the compiler
#: wrappers import the memory launcher): never inputs of a build
_SYSTEM = ("/proc/", "/sys/", "/dev/", str(Path(__file__).resolve().parents[1]) + "/")


def mapped_path(path: str, mapped: Sequence[tuple[str, str]]) -> str:
    """``path`` in builder's copy of a patched or ``exclude``-filtered source as the user's
    file it was copied from ("" when there is none: a file the patches made, keyed by the
    patches); any other path as it is."""
    for copy, orig in mapped:
        if path.startswith(copy.rstrip("/") + "/"):
            user = orig.rstrip("/") + path[len(copy.rstrip("/")):]
            return user if os.path.isfile(user) else ""
    return path


def parse_record(data: Any) -> tuple[list[Any], dict[str, str]] | None:
    """A record from a manifest — its inputs as stored (each entry is checked by
    :func:`verify`, where a malformed one counts as changed) and its name digests — or
    None when it is missing or not of the right shape."""
    if not isinstance(data, dict) or not isinstance(data.get("inputs"), list):
        return None
    try:
        names = {str(k): str(v) for k, v in data["names"]}
    except (KeyError, TypeError, ValueError):
        return None
    return data["inputs"], names


def _now(path: str) -> tuple[int, int, int, int] | str:
    """(size, mtime_ns, ctime_ns, inode) of a regular file, else why it is not one."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return "missing"
    if not stat.S_ISREG(st.st_mode):
        return "special"
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def verify(inputs: Sequence[Any], names: Mapping[str, str], names_now: Mapping[str, str],
           cache: StatCache, seen: dict[str, tuple[int, int, int, int] | str] | None = None
           ) -> Verdict:
    """Whether every recorded input (:data:`Input`) still has its content (stat first,
    then sha256 of a file whose stat changed) and every source tree its names; and, when
    not, a digest of what is there now.  ``seen``: the stat of each path earlier calls
    looked at (records of several installs share most system headers: each is looked at
    once).  A malformed entry counts as a changed file."""
    seen = {} if seen is None else seen
    renamed = [root for root, d in names.items() if names_now.get(root) != d]
    ok = not renamed
    changed = f"the file names in {renamed[0]}" if renamed else ""
    contents: list[tuple[str, str]] = []
    for entry in inputs:
        try:
            path, size, mtime, ctime, ino, sha = entry
        except (TypeError, ValueError):
            ok, changed = False, changed or "the record"
            contents.append(("", "malformed"))
            continue
        if not isinstance(path, str):
            ok, changed = False, changed or "the record"
            contents.append(("", "malformed"))
            continue
        st = seen.get(path)
        if st is None:
            st = seen[path] = _now(path)
        if isinstance(st, str):
            now = st
        elif st == (size, mtime, ctime, ino):
            now = str(sha)
        else:
            now = cache.sha256(Path(path))
        if ok and (now != sha or sha == EDITED):
            ok, changed = False, path
        contents.append((path, now))
    if ok:
        return Verdict(True, "")
    h = hashlib.sha256()
    for root in sorted(names):
        h.update(f"names\0{root}\0{names_now.get(root, '')}\n".encode())
    for path, now in contents:
        h.update(f"{path}\0{now}\n".encode())
    return Verdict(False, h.hexdigest(), changed)
