"""A static package index in a folder (``builder publish --index-dir DIR``): what any web
server can serve as a PEP 503 "simple" index, variant wheels included.

Layout::

    DIR/simple/index.html                       one link per project
    DIR/simple/<project>/index.html             one link per file, ``#sha256=<digest>``
    DIR/simple/<project>/<wheel>.whl            the wheels (all-arch and variants)
    DIR/simple/<project>/<name>-<version>-variants.json

The ``variants.json`` (PEP 825 draft) merges the ``variant.json`` of every variant wheel
of one release: an installer with variant support reads it to learn which providers
to ask and which label means what.  It has to be listed next to the wheels — upload
tools refuse it and index servers do not list it, hence this folder.

The folder grows: publishing again adds files.  A file already there with the same
bytes is kept; one with other bytes is an error (an index never replaces a file), and
nothing builder did not write is ever removed.
"""

from __future__ import annotations

import hashlib
import html
import re
import zipfile
from collections import defaultdict
from pathlib import Path

from builder.errors import UsageError
from builder.util import writer
from builder.util.files import atomic_write

__all__ = ["project_name", "write_index_dir"]

_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-[^-]+-[^-]+-[^-]+"
                    r"(-(?P<label>[0-9a-z._]+))?\.whl$")


def project_name(dist: str) -> str:
    """PEP 503's normalized name: ``llaisys_cu13`` → ``llaisys-cu13``."""
    return re.sub(r"[-_.]+", "-", dist).lower()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _variants_json(wheels: list[Path]) -> str:
    """The merged ``variants.json`` of one release's variant wheels."""
    try:  # variantlib ships no type information (no py.typed)
        from variantlib.variant_dist_info import (  # type: ignore[import-untyped]
            VariantDistInfo,
        )
    except ImportError:
        raise UsageError("variant wheels need variantlib: pip install 'builder[wheels]'"
                         ) from None
    merged = None
    for whl in sorted(wheels):
        m = _WHEEL.match(whl.name)
        assert m is not None and m.group("label")
        with zipfile.ZipFile(whl) as z:
            name = next((n for n in z.namelist() if n.count("/") == 1 and
                         n.split("/")[0].endswith(".dist-info") and
                         n.endswith("/variant.json")), None)
            if name is None:
                raise UsageError(f"{whl.name} is named as a variant wheel but holds no "
                                 f"*.dist-info/variant.json; rebuild it with builder")
            info = VariantDistInfo(z.read(name), m.group("label"))
        if merged is None:
            merged = info
        else:
            merged.merge(info)
    assert merged is not None
    return str(merged.to_str())


def _page(title: str, links: list[tuple[str, str]]) -> str:
    body = "".join(f'<a href="{html.escape(href)}">{html.escape(text)}</a><br>\n'
                   for href, text in links)
    return (f"<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" "
            f"content=\"1.0\"><title>{html.escape(title)}</title></head>\n<body>\n{body}"
            f"</body></html>\n")


def write_index_dir(wheels: list[Path], root: Path) -> list[str]:
    """Add ``wheels`` to the static index at ``root``; returns what was written.  The
    folder is builder's (a new or empty one gets its marker, as a state folder does): an
    existing folder without the marker is refused, so no file of the user's is replaced."""
    _adopt(root)
    simple = root / "simple"
    said: list[str] = []
    touched: dict[str, Path] = {}
    for whl in wheels:
        m = _WHEEL.match(whl.name)
        if m is None:
            raise UsageError(f"{whl.name}: not a wheel file name")
        project = simple / project_name(m.group("name"))
        writer.make_dirs(project)
        dest = project / whl.name
        if dest.is_symlink() or (dest.exists() and not dest.is_file()):
            raise UsageError(f"{dest} exists and is not a file builder wrote; remove it")
        if dest.exists():
            if _sha256(dest) != _sha256(whl):
                raise UsageError(f"{dest} exists with other contents; an index never "
                                 f"replaces a file: bump the recipe's package.version")
        else:
            writer.copy_file(whl, dest, keep_mode=False)
            said.append(f"  {dest.relative_to(root)}")
        touched[project.name] = project
    for project in touched.values():
        releases: dict[str, list[Path]] = defaultdict(list)
        for whl in sorted(project.glob("*.whl")):
            m = _WHEEL.match(whl.name)
            if m and m.group("label"):
                releases[f"{m.group('name')}-{m.group('version')}"].append(whl)
        for namever, variant_wheels in releases.items():
            target = project / f"{namever}-variants.json"
            atomic_write(target, _variants_json(variant_wheels))
            said.append(f"  {target.relative_to(root)} ({len(variant_wheels)} variant(s))")
        files = sorted(p for p in project.iterdir() if p.is_file() and
                       p.name.endswith((".whl", "-variants.json")))
        atomic_write(project / "index.html", _page(
            f"Links for {project.name}", [(f"{p.name}#sha256={_sha256(p)}", p.name)
                                          for p in files]))
    projects = sorted(p.name for p in simple.iterdir() if (p / "index.html").is_file()) \
        if simple.is_dir() else []
    atomic_write(simple / "index.html", _page("Simple index",
                                              [(f"{p}/", p) for p in projects]))
    return said


def _adopt(root: Path) -> None:
    """Make ``root`` builder's index folder: new or empty, it is created and marked; one
    that already carries the marker is used; anything else is refused (exit 7)."""
    from builder.errors import OwnershipError

    marker = root / writer.TREE_MARKER
    if marker.is_file() and not marker.is_symlink():
        return
    if root.is_symlink() or (root.exists() and (not root.is_dir() or any(root.iterdir()))):
        raise OwnershipError(str(root), f"it exists and builder did not make it as an index "
                             f"folder (no {writer.TREE_MARKER} marker)",
                             "name a new or empty folder for --index-dir")
    writer.make_dirs(root, named=True)
    writer.write_marker(root, writer.TREE_MARKER)
