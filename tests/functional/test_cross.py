"""A real cross build: the greetx fixture for linux-armv8 with aarch64-linux-gnu-g++ through
Conan (host and build profiles) and CMake, checked by the ELF header of what it installed."""

from __future__ import annotations

import json
import platform
import struct
from pathlib import Path

import pytest

from tests.functional.conftest import need

pytestmark = pytest.mark.functional

EM_AARCH64 = 183
EM_X86_64 = 62


def elf_machine(path: Path) -> int:
    """e_machine of an ELF file (little-endian, 32- or 64-bit: the field is at byte 18)."""
    head = path.read_bytes()[:20]
    assert head[:4] == b"\x7fELF", f"{path} is not an ELF file"
    assert head[5] == 1, f"{path} is not little-endian"
    machine: int = struct.unpack_from("<H", head, 18)[0]
    return machine


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                    reason="cross-compiles from an x86_64 host")
def test_arm_is_really_cross_compiled(project: Path, cli) -> None:  # type: ignore[no-untyped-def]
    need("conan", "cmake", "ninja", "g++", "aarch64-linux-gnu-g++", "aarch64-linux-gnu-gcc")
    r = cli("build", "greetx", "--backend", "cpu", "--backend", "arm", cwd=project)
    assert r.code == 0, r.out + r.err
    assert ("skipped greetx/arm-release-" in r.out and
            "test:header: cross-compiled for linux-armv8; run the tests on an arm64 machine"
            in r.out)
    installs = {m.parent.name.split("-", 1)[0]: m.parent for m in
                (project / ".builder" / "install" / "greetx").glob("*/manifest.json")}
    assert set(installs) == {"cpu", "arm"}
    assert elf_machine(installs["arm"] / "lib" / "libgreet.so") == EM_AARCH64
    assert elf_machine(installs["cpu"] / "lib" / "libgreet.so") == EM_X86_64
    meta = json.loads((installs["arm"] / "manifest.json").read_text())
    assert meta["target"] == "linux-armv8" and meta["cross"] is True
    assert "aarch64-linux-gnu-g++" in meta["toolchains"]
    # the package in the Conan cache is the armv8 one (its own package_id)
    profile = (project / ".builder" / "build" / "greetx" / installs["arm"].name / "conan" /
               "profile").read_text()
    assert "arch=armv8" in profile
    again = cli("build", "greetx", "--backend", "arm", cwd=project)
    assert again.code == 0 and "nothing to do" in again.out
