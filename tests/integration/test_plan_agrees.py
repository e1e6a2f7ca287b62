"""`builder plan --all` (the README's example) shows what `builder build --all` would do:
an arch the toolchain cannot build is shown as left out, not a stop (exit 0, with one line
saying the build would stop on it); a plan for more Pythons than the build's default says
so in one line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.conftest import FIXTURES, CliResult

FACTS = str(FIXTURES / "hosts" / "linux-cuda13.json")


def test_plan_all_shows_an_unsupported_arch_as_left_out(project: Path, tmp_path: Path,
                                                        cli: Callable[..., CliResult]) -> None:
    recipe = project / "recipes" / "kern.yaml"
    recipe.write_text(recipe.read_text().replace("[sm_75, sm_80]", "[sm_70, sm_75, sm_80]"))
    state = str(tmp_path / "s")
    r = cli("--state-dir", state, "plan", "--all", "--host-facts", FACTS, "--no-commands",
            cwd=project)
    assert r.code == 0, r.err
    assert "left out by --skip-unsupported: sm_70" in r.out
    assert "`builder build --all` stops on them unless --skip-unsupported" in r.err
    named = cli("--state-dir", state, "plan", "kern", "--host-facts", FACTS, cwd=project)
    assert named.code == 4 and "sm_70: not supported by nvcc 13.0" in named.err


def test_plan_all_says_why_it_has_more_pythons_than_build(project: Path, tmp_path: Path,
                                                          cli: Callable[..., CliResult]
                                                          ) -> None:
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text() + 'python:\n  versions: ["3.11", "3.12"]\n'
                      "  abi: cpython\n")
    state = str(tmp_path / "s")
    r = cli("--state-dir", state, "plan", "--all", "--host-facts", FACTS, "--no-commands",
            cwd=project)
    assert r.code == 0, r.err
    [line] = [x for x in r.out.splitlines() if x.startswith("note: --all plans every Python")]
    assert "builds Python 3.11 only, so the 3.12 variants stay to build" in line, line
    one = cli("--state-dir", state, "plan", "--all", "-p", "3.11", "--host-facts", FACTS,
              cwd=project)
    assert "note: --all plans every Python" not in one.out
