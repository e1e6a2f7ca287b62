"""A dependency built with its own C++ standard (``build.cxx_standard``) is found by its
dependents: the Conan package's id does not depend on the consumer's profile agreeing
on ``compiler.cppstd`` (builder's compile key, an option of the package, holds it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.functional.conftest import need


@pytest.mark.parametrize("dep,dependent", [("17", ""), ("", "gnu17")])
def test_a_dependency_with_its_own_cxx_standard(project: Path, cli, dep: str,  # type: ignore[no-untyped-def]
                                                dependent: str) -> None:
    need("conan", "cmake", "ninja", "g++")
    for name, std in (("greet", dep), ("app", dependent)):
        if std:
            recipe = project / "recipes" / f"{name}.yaml"
            recipe.write_text(recipe.read_text() + f'build:\n  cxx_standard: "{std}"\n')
    r = cli("build", "app", "--memory-budget", "3GiB", cwd=project)
    assert r.code == 0, r.out + r.err
    [exe] = (project / ".builder" / "install" / "app").glob("*/bin/app")
    assert subprocess.run([exe, "you"], capture_output=True, text=True,
                          check=True).stdout == "hello, you\n"
