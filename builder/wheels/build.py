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

__all__ = ["build_wheel", "dist_name", "platform_tag", "wheel_tag"]

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


def build_wheel(src: Path, out_dir: Path, name: str, version: str, tag: str,
                requires: tuple[str, ...] = (), summary: str = "",
                classifiers: tuple[str, ...] = (), keywords: tuple[str, ...] = (),
                requires_python: str = "") -> Path:
    """Write ``<out_dir>/<dist>-<version>-<tag>.whl`` from the packages under ``src``."""
    dist = dist_name(name)
    info = f"{dist}-{version}.dist-info"
    files: list[tuple[str, bytes, int]] = []
    for p in sorted(src.rglob("*")):
        rel = p.relative_to(src).as_posix()
        if not p.is_file() or "__pycache__" in rel or rel.endswith((".pyc", "pyproject.toml")):
            continue
        files.append((rel, p.read_bytes(), p.stat().st_mode))
    if not files:
        raise ValueError(f"no files to package under {src}")
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if summary:
        meta.append(f"Summary: {summary}")
    if keywords:
        meta.append(f"Keywords: {','.join(keywords)}")
    meta += [f"Classifier: {c}" for c in classifiers]
    if requires_python:
        meta.append(f"Requires-Python: {requires_python}")
    meta += [f"Requires-Dist: {r}" for r in requires]
    files.append((f"{info}/METADATA", ("\n".join(meta) + "\n").encode(), 0o644))
    purelib = "true" if tag.endswith("-any") else "false"
    wheel_txt = (f"Wheel-Version: 1.0\nGenerator: builder\nRoot-Is-Purelib: {purelib}\n"
                 f"Tag: {tag}\n")
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
