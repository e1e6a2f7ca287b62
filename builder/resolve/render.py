"""Generated files are data plus a template (``builder/resources/templates``).

Values are rendered with :class:`string.Template` after being turned into
Python/Conan literals with ``repr``/``json``, so a recipe value can never break
out of its string and inject code into the generated conanfile.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from string import Template

from builder.host.facts import HostFacts
from builder.recipe.model import CMAKE_BUILD_TYPE
from builder.resources import text

__all__ = ["CONAN_ARCH", "CONAN_OS", "CrossTarget", "compiler_settings", "conanfile", "pch_cmake",
           "profile", "templates_digest"]


@cache
def _template(name: str) -> Template:
    return Template(text("templates", name))


@cache
def templates_digest() -> str:
    """Changes whenever a template changes, so that cached builds are redone."""
    h = hashlib.sha256()
    for name in ("conanfile.py.tmpl", "profile.tmpl", "pch.cmake.tmpl"):
        h.update(_template(name).template.encode())
    return h.hexdigest()


def conanfile(*, name: str, version: str, options: Sequence[str],
              requires: Sequence[str]) -> str:
    """One conanfile for every variant of a recipe, so that all their packages share
    one recipe revision (a consumer resolves the latest revision and must find every
    variant's binary there).  ``options`` are the option names, all part of the
    package_id; their values, and those of required recipes, are given with ``-o``
    (:func:`builder.resolve.steps.conan_args`)."""
    return _template("conanfile.py.tmpl").substitute(
        name=repr(name), version=repr(version),
        options=repr({k: ["ANY"] for k in sorted(options)}),
        requires=repr(tuple(requires)))


CONAN_OS = {"linux": "Linux", "macos": "Macos", "windows": "Windows"}
CONAN_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "armv8", "arm64": "armv8"}


def compiler_settings(host: HostFacts, cxx_tool: str = "cxx",
                      target_os: str = "") -> tuple[str, str, str]:
    """(compiler, major version, libcxx) for the Conan profile; ``cxx_tool`` names the C++
    compiler in the host facts (a cross compiler's executable name for a cross build)."""
    cxx = host.tool(cxx_tool)
    host_os = target_os or host.os
    if cxx is None:
        return "gcc", "12", "libstdc++11"
    major = cxx.version.split(".")[0] or "12"
    if "clang" in cxx.path.rsplit("/", 1)[-1]:
        return ("apple-clang" if host_os == "macos" else "clang"), major, (
            "libc++" if host_os == "macos" else "libstdc++11")
    return "gcc", major, "libstdc++11"


def profile(*, host: HostFacts, build_type: str, jobs: int, cflags: Sequence[str],
            cxxflags: Sequence[str], ldflags: Sequence[str], compilers: Mapping[str, str],
            platform_requires: Sequence[str] = (), platform_tool_requires: Sequence[str] = (),
            cppstd: str = "", target: CrossTarget | None = None) -> str:
    """A Conan profile for this host, or with ``target`` the host profile of a cross build
    (``-pr:h``; the build profile is this function without ``target``).  ``cppstd`` is
    the recipe's C++ standard; without one the profile sets none, since Conan's toolchain
    turns ``compiler.cppstd`` into CMAKE_CXX_STANDARD, whose ``-std=`` comes after — and
    overrides — a project's own ``-std=`` in CMAKE_CXX_FLAGS."""
    compiler, version, libcxx = compiler_settings(
        host, target.cxx_tool if target else "cxx", target.os if target else "")
    pr = ""
    if platform_requires:
        pr = "[platform_requires]\n" + "\n".join(platform_requires) + "\n"
    if platform_tool_requires:
        pr += "[platform_tool_requires]\n" + "\n".join(platform_tool_requires) + "\n"
    text = _template("profile.tmpl").substitute(
        host=f"{host.os}-{host.arch}" + (f", target {target.name}" if target else ""),
        os=target.conan_os if target else CONAN_OS.get(host.os, host.os.capitalize()),
        arch=target.arch if target else CONAN_ARCH.get(host.arch, host.arch), compiler=compiler,
        compiler_version=version,
        libcxx=libcxx, build_type=CMAKE_BUILD_TYPE[build_type],
        cppstd=f"compiler.cppstd={cppstd}" if cppstd else
        "# compiler.cppstd: not set, the project chooses (recipe: build.cxx_standard)",
        platform_requires=pr, jobs=str(jobs), cflags=json.dumps(list(cflags)),
        cxxflags=json.dumps(list(cxxflags)), ldflags=json.dumps(list(ldflags)),
        compilers=json.dumps(dict(compilers), sort_keys=True))
    if target is None:
        return text
    # the template ends with the [conf] section: the cross settings are appended to it
    assert text.rstrip().rsplit("\n[", 1)[-1].startswith("conf]"), "profile.tmpl changed"
    conf = [("tools.cmake.cmaketoolchain:system_name", target.system_name),
            ("tools.cmake.cmaketoolchain:system_processor", target.system_processor)]
    if target.sysroot:
        conf.append(("tools.build:sysroot", target.sysroot))
    return text.rstrip("\n") + "\n" + "".join(f"{k}={v}\n" for k, v in conf if "\n" not in v)


@dataclass(frozen=True)
class CrossTarget:
    """What the host profile of a cross build says about the target platform."""

    name: str  # linux-armv8
    os: str  # builder's naming (linux, macos)
    conan_os: str  # Linux, Macos
    arch: str  # armv8
    system_name: str  # CMAKE_SYSTEM_NAME
    system_processor: str  # CMAKE_SYSTEM_PROCESSOR
    cxx_tool: str = "cxx"  # the C++ compiler's name in the host facts
    sysroot: str = ""


def pch_cmake(headers: Sequence[str]) -> str:
    """The CMake file that adds ``headers`` as precompiled headers to every C++ target.
    Each header is written as a CMake bracket argument, so no value can break out."""
    quoted = " ".join(f"[=[{h}]=]" for h in headers if "]=]" not in h)
    return _template("pch.cmake.tmpl").substitute(headers=quoted)
