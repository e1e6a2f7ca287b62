"""Wheels from an install tree's Python folder, written directly (PEP 427).

The wheel holds what the build installed under the recipe's ``python.package``
folder (packages and the native libraries inside them).  Its tag says what it
depends on: ``py3-none-<platform>`` for a package that only carries a native
library it loads itself (no Python ABI), ``cpXY-cpXY-<platform>`` for one with an
extension module, ``py3-none-any`` for pure Python.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from pathlib import Path

__all__ = ["Member", "build_wheel", "dist_name", "metadata_text", "platform_tag", "read_wheel",
           "tree_files", "wheel_tag", "write_wheel"]

#: a wheel member: its path in the archive, its bytes, its file mode
Member = tuple[str, bytes, int]

_PLATFORM = {("linux", "x86_64"): "linux_x86_64", ("linux", "aarch64"): "linux_aarch64",
             ("macos", "arm64"): "macosx_11_0_arm64", ("macos", "x86_64"): "macosx_10_15_x86_64"}


def platform_tag(os_name: str, arch: str) -> str:
    return _PLATFORM.get((os_name, arch), f"{os_name}_{arch}".replace("-", "_"))


def wheel_tag(abi: str, python: str, os_name: str, arch: str, has_native: bool) -> str:
    if abi == "cpython" and python:
        cp = "cp" + python.replace(".", "")
        return f"{cp}-{cp}-{platform_tag(os_name, arch)}"
    if has_native:
        return f"py3-none-{platform_tag(os_name, arch)}"
    return "py3-none-any"


def dist_name(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def metadata_text(name: str, version: str, requires: tuple[str, ...] = (), summary: str = "",
                  classifiers: tuple[str, ...] = (), keywords: tuple[str, ...] = (),
                  requires_python: str = "") -> str:
    """A core-metadata file (``METADATA``) for the given fields."""
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if summary:
        meta.append(f"Summary: {summary}")
    if keywords:
        meta.append(f"Keywords: {','.join(keywords)}")
    meta += [f"Classifier: {c}" for c in classifiers]
    if requires_python:
        meta.append(f"Requires-Python: {requires_python}")
    meta += [f"Requires-Dist: {r}" for r in requires]
    return "\n".join(meta) + "\n"


def tree_files(src: Path) -> list[Member]:
    """The files of a package folder as wheel members (caches and build files left out)."""
    files: list[Member] = []
    for p in sorted(src.rglob("*")):
        rel = p.relative_to(src).as_posix()
        if not p.is_file() or "__pycache__" in rel or rel.endswith((".pyc", "pyproject.toml")):
            continue
        files.append((rel, p.read_bytes(), p.stat().st_mode))
    return files


def build_wheel(src: Path, out_dir: Path, name: str, version: str, tag: str,
                requires: tuple[str, ...] = (), summary: str = "",
                classifiers: tuple[str, ...] = (), keywords: tuple[str, ...] = (),
                requires_python: str = "") -> Path:
    """Write ``<out_dir>/<dist>-<version>-<tag>.whl`` from the packages under ``src``."""
    files = tree_files(src)
    if not files:
        raise ValueError(f"no files to package under {src}")
    info = f"{dist_name(name)}-{version}.dist-info"
    meta = metadata_text(name, version, requires, summary, classifiers, keywords,
                         requires_python)
    files.append((f"{info}/METADATA", meta.encode(), 0o644))
    return write_wheel(files, out_dir, name, version, tag)


def write_wheel(files: list[Member], out_dir: Path, name: str, version: str,
                tag: str) -> Path:
    """Write ``<out_dir>/<dist>-<version>-<tag>.whl`` atomically from its members (its
    ``METADATA`` among them): ``WHEEL`` and ``RECORD`` are written here, any earlier ones
    in ``files`` replaced; entries are sorted and dated alike, so equal inputs give equal
    bytes."""
    dist = dist_name(name)
    info = f"{dist}-{version}.dist-info"
    files = [f for f in files if f[0] not in (f"{info}/WHEEL", f"{info}/RECORD")]
    purelib = "true" if tag.endswith("-any") else "false"
    py, abi, plat = tag.split("-")
    tags = "".join(f"Tag: {a}-{b}-{c}\n" for a in py.split(".") for b in abi.split(".")
                   for c in plat.split("."))  # a compressed tag set, expanded
    wheel_txt = f"Wheel-Version: 1.0\nGenerator: builder\nRoot-Is-Purelib: {purelib}\n{tags}"
    files.append((f"{info}/WHEEL", wheel_txt.encode(), 0o644))
    record = "".join(f"{rel},{_record_hash(data)},{len(data)}\n" for rel, data, _ in files)
    record += f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode(), 0o644))
    final = out_dir / f"{dist}-{version}-{tag}.whl"
    from builder.util.writer import atomic_file

    with atomic_file(final, sync=False) as f, \
            zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for rel, data, mode in files:
            zi = zipfile.ZipInfo(rel, date_time=(2020, 1, 1, 0, 0, 0))  # reproducible
            zi.external_attr = ((mode & 0o777) | 0o100000) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return final


def read_wheel(path: Path) -> list[Member]:
    """A wheel's members (folders left out), with their modes."""
    with zipfile.ZipFile(path) as z:
        return [(i.filename, z.read(i), (i.external_attr >> 16) or 0o644)
                for i in z.infolist() if not i.is_dir()]
