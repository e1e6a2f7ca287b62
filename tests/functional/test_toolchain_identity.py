"""A compiler is identified by its content (builder.host.identity), not by its version
string or its wrapper's stat: real g++ binaries copied, wrapped and swapped."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from builder.host.probe import probe
from tests.functional.conftest import need

pytestmark = pytest.mark.functional


def _gxx_copy(dest: Path, extra: bytes = b"") -> Path:
    """A copy of the real g++ driver (same version output) at ``PREFIX/bin/g++``;
    ``extra`` bytes appended make another binary that runs the same (an ELF file ignores
    trailing bytes).  The driver finds its programs relative to itself: ``PREFIX/lib``
    and ``PREFIX/libexec`` link to the real ones."""
    real = os.path.realpath(shutil.which("g++") or "g++")
    home = Path(real).parent.parent
    dest.parent.mkdir(parents=True, exist_ok=True)
    for sub in ("lib", "libexec"):
        link = dest.parent.parent / sub
        if not link.exists() and (home / sub).is_dir():
            link.symlink_to(home / sub)
    dest.write_bytes(Path(real).read_bytes() + extra)
    dest.chmod(0o755)
    return dest


def _wrapper(path: Path, target: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\nexec {target} "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_two_binaries_of_one_version_are_two_toolchains(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    need("g++")
    a = _gxx_copy(tmp_path / "a" / "bin" / "g++")
    b = _gxx_copy(tmp_path / "b" / "bin" / "g++", b"\0patched")
    monkeypatch.setenv("CXX", str(a))
    ta = probe(tmp_path / "host.json").tool("cxx")
    monkeypatch.setenv("CXX", str(b))
    tb = probe(tmp_path / "host.json").tool("cxx")
    assert ta is not None and tb is not None
    assert (ta.path, tb.path) == (str(a), str(b))
    assert ta.version == tb.version
    assert ta.identity and tb.identity and ta.identity != tb.identity


def test_a_wrappers_upgraded_target_is_another_toolchain(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    need("g++")
    real = _gxx_copy(tmp_path / "real" / "bin" / "g++")
    wrapper = _wrapper(tmp_path / "bin" / "g++", real)
    monkeypatch.setenv("CXX", str(wrapper))
    cache = tmp_path / "host.json"
    before = probe(cache).tool("cxx")
    again = probe(cache).tool("cxx")  # from the cache: the same identity
    _gxx_copy(real, b"\0upgraded")  # the wrapper itself is untouched
    after = probe(cache).tool("cxx")
    assert before is not None and again is not None and after is not None
    assert before.identity == again.identity
    assert after.version == before.version
    assert after.identity != before.identity


def test_a_switched_compiler_rebuilds(project: Path, cli, monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
                                      tmp_path: Path) -> None:
    need("conan", "cmake", "ninja", "g++")
    real = _gxx_copy(tmp_path / "real" / "bin" / "g++")
    monkeypatch.setenv("CXX", str(_wrapper(tmp_path / "bin" / "g++", real)))
    assert cli("build", "greet", cwd=project).code == 0
    r = cli("build", "greet", cwd=project)
    assert r.code == 0 and "nothing to do" in r.out, r.out
    _gxx_copy(real, b"\0upgraded")
    r2 = cli("build", "greet", cwd=project)
    assert r2.code == 0, r2.out + r2.err
    assert "nothing to do" not in r2.out
