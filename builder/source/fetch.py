"""Fetching ``git`` and ``url`` sources into a content-addressed folder.

``git`` sources are cloned and checked out at their full commit id (verified
after checkout).  ``url`` archives are downloaded, their sha256 compared with the
recipe's *before* anything is extracted, and extracted safely: absolute paths,
``..``, links that point outside the tree and device files are refused, naming
the member.  Everything happens in ``<dest>.partial`` and is renamed into place
only when complete, with a marker file recording what it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from builder.errors import FetchError
from builder.source.policy import Limits
from builder.util import writer

__all__ = ["MARKER", "download", "extract", "git_transport_env", "is_fetched", "source_key",
           "strip_single_top", "write_marker"]

MARKER = ".builder-source.json"



def source_key(kind: str, location: str, rev: str, sha256: str,
               patch_digests: tuple[str, ...]) -> str:
    blob = json.dumps([kind, location, rev, sha256, list(patch_digests)])
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def git_transport_env() -> dict[str, str]:
    """Only the transports a recipe may name (:data:`GIT_PROTOCOLS`): git refuses
    ``fd::``, ``ext::`` and other remote helpers, which could run commands or wait on a
    descriptor forever, even from a submodule's URL."""
    from builder.recipe.giturl import GIT_PROTOCOLS

    return {"GIT_ALLOW_PROTOCOL": ":".join(GIT_PROTOCOLS), "GIT_PROTOCOL_FROM_USER": "0"}


def download(url: str, dest: Path, expected: str, limits: Limits | None = None,
             progress: Callable[[str], None] | None = None) -> None:
    """Download ``url`` to ``dest``, verifying its sha256 (the file is removed on mismatch),
    within ``limits`` (time and size).  ``url`` may hold a token: messages show it redacted.
    ``progress``: told every few seconds how far the download is
    (:mod:`builder.util.waiting`), also while the server says nothing."""
    import urllib.request  # lazily: planning imports this module, only fetching downloads

    from builder.util.secrets import redact
    from builder.util.waiting import ticker

    full, url = url, redact(url)
    limits = limits or Limits()
    h = hashlib.sha256()
    if not full.startswith(("https://", "http://", "file://")):
        raise FetchError(f"unsupported URL scheme in {url} (use https:// or file://)")
    if url.startswith("file://"):  # /dev/zero or a FIFO would never end
        local = urllib.request.url2pathname(full[len("file://"):])
        try:
            regular = stat.S_ISREG(os.stat(local).st_mode)
        except OSError as exc:
            raise FetchError(f"cannot download {url}: {exc.strerror}") from None
        if not regular:
            raise FetchError(f"cannot download {url}: not a regular file")
    deadline = time.monotonic() + limits.timeout
    size, total = 0, ""  # bytes so far; the size the server announced

    def say(seconds: float) -> None:
        if progress is not None:
            got = f"{size / 1e6:.1f} MB" + (f" of {total}" if total else "")
            progress(f"fetching {url}: {got}, {seconds:.0f} s (of at most "
                     f"{limits.timeout:.0f} s)")

    try:
        with ticker(say), \
                urllib.request.urlopen(full, timeout=min(60, limits.timeout)) as resp, \
                writer.atomic_file(dest) as out:  # appears only once complete
            length = resp.headers.get("Content-Length", "") if resp.headers else ""
            total = f"{int(length) / 1e6:.1f} MB" if str(length).isdigit() else ""
            for chunk in iter(lambda: resp.read(1 << 16), b""):
                size += len(chunk)
                if size > limits.max_size:
                    raise FetchError(f"cannot download {url}: larger than the fetch size cap "
                                     f"({limits.max_size} bytes); raise "
                                     f"BUILDER_FETCH_MAX_SIZE if it is expected")
                if time.monotonic() > deadline:
                    raise FetchError(f"cannot download {url}: not done after "
                                     f"{limits.timeout:.0f} s; raise BUILDER_FETCH_TIMEOUT "
                                     f"if the server is slow")
                h.update(chunk)
                out.write(chunk)
            if h.hexdigest() != expected:
                raise _Mismatch
    except _Mismatch:
        raise FetchError(f"sha256 mismatch for {url}\n  expected: {expected}\n  actual:   "
                         f"{h.hexdigest()}\n  nothing was extracted; if the new archive is "
                         f"trusted, put the actual sha256 in the recipe") from None
    except (OSError, ValueError) as exc:
        raise FetchError(f"cannot download {url}: {redact(str(exc))}") from None


class _Mismatch(Exception):
    """The download's sha256 differs: its temporary file is dropped."""


def _check_name(name: str, archive: str) -> PurePosixPath:
    p = PurePosixPath(name)
    if p.is_absolute() or name.startswith(("/", "\\")) or ".." in p.parts:
        raise FetchError(f"{archive}: refusing member '{name}': it would be written outside "
                         f"the source folder")
    return p


def _inside(base: Path, target: Path) -> bool:
    try:
        target.resolve().relative_to(base.resolve())
        return True
    except ValueError:
        return False


def extract(archive: Path, dest: Path, limits: Limits | None = None, label: str = "") -> None:
    """Extract a .tar(.gz/.bz2/.xz) or .zip into ``dest``, refusing unsafe members and
    staying within ``limits``; a damaged archive is a :class:`FetchError` naming it."""
    import lzma  # lazily, like the archive modules: planning never extracts
    import tarfile
    import zipfile
    import zlib

    limits = limits or Limits()
    try:
        _extract(archive, dest, limits, label or archive.name)
    except FetchError:
        raise
    except (tarfile.TarError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error,
            lzma.LZMAError, OSError, ValueError, NotImplementedError) as exc:
        raise FetchError(f"{label or archive.name}: cannot extract: {type(exc).__name__}: {exc} "
                         f"(a truncated or damaged archive?)") from None


def _extract(archive: Path, dest: Path, limits: Limits, name: str) -> None:
    import tarfile
    import zipfile

    writer.make_dirs(dest)
    deadline = time.monotonic() + limits.timeout

    def budget(count: int, total: int) -> None:
        if count > limits.max_files:
            raise FetchError(f"{name}: more than {limits.max_files} members; refusing")
        if total > limits.max_size:
            raise FetchError(f"{name}: extracts to more than the fetch size cap "
                             f"({limits.max_size} bytes); raise BUILDER_FETCH_MAX_SIZE if it "
                             f"is expected")
        if time.monotonic() > deadline:
            raise FetchError(f"{name}: extraction not done after {limits.timeout:.0f} s")

    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as z:
            total = 0
            infos = z.infolist()
            budget(len(infos), 0)
            for info in infos:
                rel = _check_name(info.filename, name)
                mode = info.external_attr >> 16
                if stat.S_ISLNK(mode):
                    raise FetchError(f"{name}: refusing symlink member '{info.filename}'")
                target = dest / rel
                if info.is_dir():
                    writer.make_dirs(target)
                    continue
                with z.open(info) as src, writer.atomic_file(
                        target, mode=0o777 if mode & 0o111 else 0o666, sync=False) as out:
                    for chunk in iter(lambda: src.read(1 << 20), b""):  # sizes may lie
                        total += len(chunk)
                        budget(0, total)
                        out.write(chunk)
        return
    try:
        tf = tarfile.open(archive)  # noqa: SIM115 - closed below
    except tarfile.TarError as exc:
        raise FetchError(f"{name}: not a tar or zip archive ({exc})") from None
    with tf:
        members = tf.getmembers()
        budget(len(members), sum(m.size for m in members if m.isfile()))
        for m in members:
            rel = _check_name(m.name, name)
            if m.isdev() or m.isfifo():
                raise FetchError(f"{name}: refusing device or fifo member '{m.name}'")
            if m.issym() or m.islnk():
                link = PurePosixPath(m.linkname)
                target = (dest / rel.parent / link) if m.issym() else dest / link
                if link.is_absolute() or not _inside(dest, target):
                    raise FetchError(f"{name}: refusing link '{m.name}' -> '{m.linkname}': "
                                     f"it points outside the source folder")
        tf.extractall(dest, members=members, filter="data")


def strip_single_top(dest: Path) -> None:
    """``pkg-1.0/…`` archives: move the single top folder's content up."""
    entries = list(dest.iterdir())
    if len(entries) == 1 and entries[0].is_dir():
        top = entries[0]
        tmp = dest.with_name(dest.name + ".strip")
        writer.move(top, tmp)
        writer.remove_empty_dir(dest)
        writer.move(tmp, dest)


def write_marker(dest: Path, info: dict[str, object]) -> None:
    writer.write_text(dest / MARKER, json.dumps(info, indent=2, sort_keys=True))


def is_fetched(dest: Path) -> bool:
    return (dest / MARKER).is_file()


def read_marker(dest: Path) -> dict[str, object]:
    """A fetched tree's marker ({} when absent or unreadable)."""
    try:
        data = json.loads((dest / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def branch_note(recipe: str, location: str, rev: str, pinned: tuple[str, str] | None
                ) -> str:
    """What a plan or a build says of an ``allow_branch`` source: the commit its branch
    or tag was resolved to and when (``pinned``: (commit, UTC time) from the fetched
    tree's marker), or that it is resolved when fetched."""
    if pinned is None:
        return (f"{recipe}: git {location} {rev!r} is a branch or tag (allow_branch): "
                f"resolved to a commit when fetched, now; the build records it")
    commit, when = pinned
    return (f"{recipe}: git {location} {rev!r} is pinned to commit {commit}, resolved "
            f"{when or 'at an unrecorded time'}; remove builder's fetched copy "
            f"(`builder cache prune`) or write that commit as rev to change it")
