"""The one writer: every file and folder builder creates, replaces or removes goes
through this module (``tests/unit/test_writer_is_the_only_writer.py`` fails when another
module calls a raw write API).

Its guarantees:

* **Owned places only.**  A path may be written when a folder above it holds one of
  builder's ownership markers (:data:`STATE_MARKER` in a state folder,
  :data:`TREE_MARKER` in a published kernel tree).  Anywhere else builder writes only a
  file the user *named* on the command line (``builder lock --output FILE``, ``builder
  report -o FILE``, the workflow file of ``builder matrix --write-workflow``), and then
  replaces an existing file only when its content is recognisably builder's (the caller
  passes a ``recognise`` test, e.g. the workflow's header) or with ``--force``.
* **No links, no special files.**  Inside an owned folder no folder between the marker
  and the file may be a symbolic link (a symlinked ``.builder/logs`` is refused), and the
  file itself is never a link, a FIFO, a device or a folder: such a target is refused,
  never replaced and never written through.  Files are opened with ``O_NOFOLLOW``.
* **Atomic.**  A file is written to ``.<name>.tmp<pid>`` in its own folder, flushed
  (``fsync`` for what must survive a crash) and renamed over the old one: a reader, a
  crash or a full disk leaves the old content or the new, never half, and a failed write
  removes its temporary file and raises :class:`OSError` naming the final path.

Refusals raise :class:`~builder.errors.OwnershipError` (exit 7); OS errors stay
:class:`OSError` with ``filename`` set, for the caller to turn into
:class:`~builder.errors.FileSystemError`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from builder.errors import OwnershipError

__all__ = ["MARKERS", "MARK_TEXT", "STATE_MARKER", "TREE_MARKER", "atomic_file", "copy_file",
           "copy_link", "copy_tree", "make_dirs", "make_temp_dir", "move", "open_lock",
           "open_stream", "owned_root", "remove",
           "remove_empty_dir", "replace_dir",
           "write_bytes", "write_marker", "write_text"]

STATE_MARKER = ".builder-state"
TREE_MARKER = ".builder-owned"
MARKERS = (STATE_MARKER, TREE_MARKER)
MARK_TEXT = "builder: this folder was created by builder, which may replace or delete it\n"
#: how much of a named file is read to recognise it as builder's
_RECOGNISE_BYTES = 1 << 16

Recognise = Callable[[bytes], bool]


def _abs(path: Path | str) -> Path:
    """Absolute without resolving links: the links on the way are what is checked."""
    return Path(os.path.abspath(os.fspath(path)))


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _has_marker(folder: Path) -> bool:
    for name in MARKERS:
        try:
            if stat.S_ISREG(os.lstat(folder / name).st_mode):
                return True
        except OSError:  # missing, or ``folder`` is not a folder
            continue
    return False


def owned_root(path: Path | str) -> Path | None:
    """The nearest folder at or above ``path`` that holds an ownership marker."""
    p = _abs(path)
    for folder in (p, *p.parents):
        with contextlib.suppress(OSError):
            if _has_marker(folder):
                return folder
    return None


def _refuse(path: Path, reason: str, fix: str) -> OwnershipError:
    return OwnershipError(str(path), reason, fix)


def _kind(st: os.stat_result) -> str:
    m = st.st_mode
    return ("a symbolic link" if stat.S_ISLNK(m) else "a folder" if stat.S_ISDIR(m) else
            "a FIFO" if stat.S_ISFIFO(m) else "a device" if stat.S_ISCHR(m) or
            stat.S_ISBLK(m) else "a socket" if stat.S_ISSOCK(m) else "a special file")


def _no_links_below(root: Path, folder: Path) -> None:
    """No folder from ``root`` (excluded) down to ``folder`` is a link or a non-folder."""
    rel = folder.relative_to(root)
    cur = root
    for part in rel.parts:
        cur = cur / part
        st = _lstat(cur)
        if st is None:
            return  # made by make_dirs, below
        if stat.S_ISLNK(st.st_mode):
            raise _refuse(cur, "it is a symbolic link where builder keeps a folder; "
                          "builder never writes through links", "remove the link (builder "
                          "recreates the folder)")
        if not stat.S_ISDIR(st.st_mode):  # a file in the way: an OS error, exit 8
            raise NotADirectoryError(errno.ENOTDIR, "a file stands where builder keeps a "
                                     "folder", str(cur))


def _check_place(path: Path, named: bool) -> Path | None:
    """The owned root of ``path`` (its links checked), or None for a named file."""
    root = owned_root(path.parent)
    if root is not None:
        _no_links_below(root, path.parent)
        return root
    if not named:
        raise _refuse(path, "it lies outside every folder builder owns (no "
                      f"{STATE_MARKER} or {TREE_MARKER} marker above it)",
                      "use a state folder builder made (--state-dir), or name the file "
                      "on the command line")
    return None


def _check_target(path: Path, named: bool, force: bool,
                  recognise: Recognise | None) -> None:
    """Refuse a link, a special file, or a named file builder did not write."""
    st = _lstat(path)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):  # named as the user gave it: an OS error, exit 8
        raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", str(path))
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, f"it is {_kind(st)}; builder writes only regular files and "
                      f"never replaces or writes through anything else",
                      "name a regular file (or a new path)")
    if named and not force and owned_root(path.parent) is None:
        head = _read_head(path)
        if recognise is None or not recognise(head):
            raise _refuse(path, "it exists and builder did not write it",
                          "move it away, name another file, or pass --force to "
                          "replace it")


def _read_head(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        return os.read(fd, _RECOGNISE_BYTES)
    finally:
        os.close(fd)


def _named_error(exc: OSError, path: Path) -> OSError:
    """The same error, naming the final path (a write into a temporary file names
    nothing, so a full disk would otherwise read as ``?``)."""
    return OSError(exc.errno or errno.EIO, exc.strerror or str(exc), str(path))


def make_dirs(path: Path | str, *, named: bool = False) -> Path:
    """Create a folder (and its parents) inside an owned folder — or, ``named``, where
    the user or a recipe said (an install root).  An existing link on the way below the
    marker is refused."""
    p = _abs(path)
    root = owned_root(p)
    if root is None and not named:
        raise _refuse(p, "it lies outside every folder builder owns",
                      "use a state folder builder made (--state-dir)")
    if root is not None:
        _no_links_below(root, p)
    try:
        os.makedirs(p, exist_ok=True)
    except OSError as exc:
        raise _named_error(exc, p) from None
    st = os.lstat(p)
    if root is not None and not stat.S_ISDIR(st.st_mode):
        raise _refuse(p, f"it is {_kind(st)}, not a folder", "remove it")
    return p


def write_bytes(path: Path | str, data: bytes, *, named: bool = False,
                force: bool = False, recognise: Recognise | None = None,
                sync: bool = True, mode: int = 0o666) -> None:
    """Write ``data`` to ``path`` atomically (see the module's guarantees).  ``mode``
    is filtered by the umask, like any new file."""
    def fill(fd: int) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]

    _atomic(_abs(path), fill, named, force, recognise, sync, mode)


def _atomic(p: Path, fill: Callable[[int], None], named: bool, force: bool,
            recognise: Recognise | None, sync: bool, mode: int) -> None:
    with _temp(p, named, force, recognise, sync, mode) as fd:
        fill(fd)


@contextlib.contextmanager
def _temp(p: Path, named: bool, force: bool, recognise: Recognise | None, sync: bool,
          mode: int) -> Iterator[int]:
    """The descriptor of ``.<name>.tmp<pid>`` next to ``p``, renamed over ``p`` when the
    block ends well and removed when it does not."""
    _check_place(p, named)
    _check_target(p, named, force, recognise)
    make_dirs(p.parent, named=True)
    tmp = p.with_name(f".{p.name}.tmp{os.getpid()}")
    st = _lstat(tmp)
    if st is not None and not stat.S_ISDIR(st.st_mode):
        os.unlink(tmp)  # left by a killed process that had our pid
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    except OSError as exc:
        raise _named_error(exc, p) from None
    try:
        try:
            yield fd
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        _check_target(p, named, force, recognise)  # not swapped for a link meanwhile
        os.replace(tmp, p)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _named_error(exc, p) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if sync:
        _sync_folder(p.parent)


@contextlib.contextmanager
def atomic_file(path: Path | str, *, mode: int = 0o666,
                sync: bool = True) -> Iterator[IO[bytes]]:
    """A binary file in an owned place, written as it goes (a download, an extracted
    member): it appears at ``path`` only when the block ends without an error."""
    with _temp(_abs(path), False, False, None, sync, mode) as fd, \
            os.fdopen(os.dup(fd), "wb") as f:
        yield f


def write_text(path: Path | str, text: str, **kw: object) -> None:
    """:func:`write_bytes` of UTF-8 text."""
    write_bytes(path, text.encode("utf-8"), **kw)  # type: ignore[arg-type]


def write_marker(folder: Path | str, name: str) -> None:
    """Write an ownership marker into ``folder`` (which the caller made or adopted)."""
    f = _abs(folder)
    st = os.lstat(f)
    if not stat.S_ISDIR(st.st_mode):
        raise _refuse(f, f"it is {_kind(st)}, not a folder", "name a folder")
    write_bytes(f / name, MARK_TEXT.encode(), named=True, force=True)


def _sync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _open_regular(path: Path, flags: int, mode: int = 0o666) -> int:
    """Open without following a link and without blocking on a FIFO; refuse anything
    that is not a regular file."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK, mode)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            st = _lstat(path)
            raise _refuse(path, f"it is {_kind(st) if st else 'not a regular file'}; "
                          f"builder never writes through links or into special files",
                          "remove it (builder recreates it)") from None
        raise _named_error(exc, path) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise _refuse(path, f"it is {_kind(st)}; builder never writes into special "
                      f"files", "remove it (builder recreates it)")
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return fd


def open_stream(path: Path | str, *, append: bool = False) -> IO[str]:
    """A text file written as it goes (a step's log), inside an owned folder."""
    p = _abs(path)
    _check_place(p, named=False)
    make_dirs(p.parent)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    fd = _open_regular(p, flags)
    return os.fdopen(fd, "a" if append else "w", encoding="utf-8", errors="replace")


def open_lock(path: Path | str) -> int:
    """The descriptor of a lock file (read-write, created when missing) in an owned
    folder; a link or a special file there is refused."""
    p = _abs(path)
    _check_place(p, named=False)
    return _open_regular(p, os.O_RDWR | os.O_CREAT, 0o644)


def _owned_or_refuse(p: Path, doing: str) -> None:
    root = owned_root(p.parent)
    if root is None and not _has_marker(p):
        raise _refuse(p, f"builder would {doing} it, and it lies outside every folder "
                      f"builder owns", "nothing to do: builder leaves it alone")
    if root is not None:
        _no_links_below(root, p.parent)


def remove(path: Path | str, *, missing_ok: bool = True) -> None:
    """Remove a file, link or folder tree inside an owned folder (or a tree holding a
    marker); a link is removed, never followed."""
    p = _abs(path)
    st = _lstat(p)
    if st is None:
        if missing_ok:
            return
        raise FileNotFoundError(errno.ENOENT, "no such file or folder", str(p))
    _owned_or_refuse(p, "remove")
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(p, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(p)


def remove_empty_dir(path: Path | str) -> None:
    """Remove an empty folder in an owned place (OSError when it is not empty)."""
    p = _abs(path)
    _owned_or_refuse(p, "remove")
    os.rmdir(p)


def move(src: Path | str, dst: Path | str) -> None:
    """Rename ``src`` to ``dst`` (replacing a file or an empty folder there): ``src``
    is owned, and ``dst`` is in an owned place, holds a marker, or is a new name next to
    ``src`` (a marked tree renamed aside in a user's install root)."""
    s, d = _abs(src), _abs(dst)
    _owned_or_refuse(s, "move")
    if owned_root(d.parent):
        _check_place(d, named=False)
    elif _lstat(d) is not None or d.parent != s.parent:
        _owned_or_refuse(d, "replace")
    try:
        os.replace(s, d)
    except OSError as exc:
        raise _named_error(exc, d) from None


def make_temp_dir(parent: Path | str, prefix: str, *, named: bool = False,
                  public: bool = False) -> Path:
    """A new folder ``<parent>/<prefix>XXXXXXXX``; ``public`` gives it the mode a plain
    ``mkdir`` would (readable by others under umask 022) instead of 0700."""
    p = make_dirs(parent, named=named)
    made = Path(tempfile.mkdtemp(prefix=prefix, dir=p))
    if public:
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(made, 0o777 & ~mask)
    return made


def copy_file(src: Path | str, dst: Path | str, *, keep_mode: bool = True,
              named: bool = False) -> None:
    """Copy a regular file's content atomically (its mode too, with ``keep_mode``)."""
    s = Path(src)
    st = os.stat(s)
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(s, f"it is {_kind(st)}; builder copies only regular files",
                      "point at a regular file")

    def fill(fd: int) -> None:
        with open(s, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]

    _atomic(_abs(dst), fill, named, False, None, False,
            (st.st_mode & 0o777) if keep_mode else 0o666)


def copy_link(src: Path | str, dst: Path | str) -> None:
    """Copy a symbolic link as a link (a library's version link), atomically."""
    d = _abs(dst)
    _check_place(d, named=False)
    _check_target(d, False, False, None)
    tmp = d.with_name(f".{d.name}.tmp{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    try:
        os.symlink(os.readlink(src), tmp)
        os.replace(tmp, d)
    except OSError as exc:
        raise _named_error(exc, d) from None


def copy_tree(src: Path | str, dst: Path | str, *, dirs_exist_ok: bool = False,
              ignore: Callable[[str, list[str]], set[str]] | None = None) -> None:
    """Copy a folder tree (links copied as links) into an owned place."""
    d = _abs(dst)
    _check_place(d, named=False)
    if _lstat(d) is not None:
        _no_links_below(owned_root(d.parent) or d.parent, d)
    try:
        shutil.copytree(src, d, symlinks=True, dirs_exist_ok=dirs_exist_ok, ignore=ignore)
    except OSError as exc:
        raise _named_error(exc, d) from None


def replace_dir(src: Path | str, dst: Path | str) -> None:
    """Move the finished folder ``src`` (owned, or holding a marker) to ``dst``,
    replacing the folder there, which must be owned too (absent is fine)."""
    s, d = _abs(src), _abs(dst)
    _owned_or_refuse(s, "move")
    if _lstat(d) is not None:
        _owned_or_refuse(d, "replace")
    make_dirs(d.parent, named=True)
    old = d.with_name(f".{d.name}.old{os.getpid()}")
    if _lstat(old) is not None:  # left by a killed builder that had this pid
        remove(old)
    try:
        if _lstat(d) is not None:
            os.replace(d, old)
        os.replace(s, d)
    except OSError as exc:
        raise _named_error(exc, d) from None
    if _lstat(old) is not None:
        shutil.rmtree(old, ignore_errors=True)
