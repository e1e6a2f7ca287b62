"""Generated files are data plus a template (``builder/templates``).

Values are rendered with :class:`string.Template` after being turned into
Python/Conan literals with ``repr``/``json``, so a recipe value can never break
out of its string and inject code into the generated conanfile.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from string import Template

from .host import HostFacts
from .model import CMAKE_BUILD_TYPE


@cache
def _template(name: str) -> Template:
    return Template(resources.files("builder").joinpath("templates", name).read_text("utf-8"))


@cache
def templates_digest() -> str:
    """Changes whenever a template changes, so that cached builds are redone."""
    h = hashlib.sha256()
    for name in ("conanfile.py.tmpl", "profile.tmpl", "pch.cmake.tmpl"):
        h.update(_template(name).template.encode())
    return h.hexdigest()


def _comment(text: str) -> str:
    """Text for a ``#`` comment line: no character that Python reads as a line end."""
    return " ".join(text.splitlines())


def conanfile(*, name: str, version: str, recipe_file: str, variant_id: str,
              options: Mapping[str, str], requires: Sequence[str], stage: str,
              dep_options: Mapping[str, str]) -> str:
    """``options`` are this package's (all part of its package_id); ``dep_options`` pin
    the options of required recipes (``name/*:option``) to the variants built first."""
    return _template("conanfile.py.tmpl").substitute(
        name=repr(name), version=repr(version), recipe_file=_comment(recipe_file),
        variant_id=_comment(variant_id),
        options=repr({k: ["ANY"] for k in options}),
        default_options=repr({**options, **dep_options}),
        requires=repr(tuple(requires)), stage=repr(stage))


_OS = {"linux": "Linux", "macos": "Macos", "windows": "Windows"}
_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "armv8", "arm64": "armv8"}


def compiler_settings(host: HostFacts) -> tuple[str, str, str]:
    """(compiler, major version, libcxx) for the Conan profile."""
    cxx = host.tool("cxx")
    if cxx is None:
        return "gcc", "12", "libstdc++11"
    major = cxx.version.split(".")[0] or "12"
    if "clang" in cxx.path.rsplit("/", 1)[-1]:
        return ("apple-clang" if host.os == "macos" else "clang"), major, (
            "libc++" if host.os == "macos" else "libstdc++11")
    return "gcc", major, "libstdc++11"


def profile(*, host: HostFacts, build_type: str, jobs: int, cflags: Sequence[str],
            cxxflags: Sequence[str], ldflags: Sequence[str], compilers: Mapping[str, str],
            platform_requires: Sequence[str] = (), platform_tool_requires: Sequence[str] = (),
            cppstd: str = "17") -> str:
    compiler, version, libcxx = compiler_settings(host)
    pr = ""
    if platform_requires:
        pr = "[platform_requires]\n" + "\n".join(platform_requires) + "\n"
    if platform_tool_requires:
        pr += "[platform_tool_requires]\n" + "\n".join(platform_tool_requires) + "\n"
    return _template("profile.tmpl").substitute(
        host=f"{host.os}-{host.arch}", os=_OS.get(host.os, host.os.capitalize()),
        arch=_ARCH.get(host.arch, host.arch), compiler=compiler, compiler_version=version,
        libcxx=libcxx, cppstd=cppstd, build_type=CMAKE_BUILD_TYPE[build_type],
        platform_requires=pr, jobs=str(jobs), cflags=json.dumps(list(cflags)),
        cxxflags=json.dumps(list(cxxflags)), ldflags=json.dumps(list(ldflags)),
        compilers=json.dumps(dict(compilers), sort_keys=True))


def pch_cmake(headers: Sequence[str]) -> str:
    """The CMake file that adds ``headers`` as precompiled headers to every C++ target.
    Each header is written as a CMake bracket argument, so no value can break out."""
    quoted = " ".join(f"[=[{h}]=]" for h in headers if "]=]" not in h)
    return _template("pch.cmake.tmpl").substitute(headers=quoted)
