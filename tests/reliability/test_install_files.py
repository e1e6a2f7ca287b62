"""``install.files`` copies only from the recipe's source and build trees: a ``from``
that leaves them (``../../..``, ``/etc/hostname``) is refused where it is written, and
one that reaches out through a link is refused when the stage is filled."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult


def recipe(project: Path, src: str) -> Path:
    text = (project / "recipes" / "greet.yaml").read_text()
    path = project / "recipes" / "greet.yaml"
    path.write_text(text + f"install:\n  files:\n    - from: {src!r}\n      to: share\n")
    return path


@pytest.mark.parametrize("src", ["../../..", "/etc/hostname", "${source}/../../etc",
                                 "include/../../../x", "${build}/../../.."])
def test_a_source_outside_the_trees_is_refused_where_it_is_written(
        project: Path, src: str, cli: Callable[..., CliResult]) -> None:
    recipe(project, src)
    r = cli("plan", "greet", cwd=project)
    assert r.code == 3, r.out + r.err
    assert "recipes/greet.yaml:" in r.err and "install.files[0].from" in r.err, r.err
    assert not (project / ".builder" / "install").exists()


def test_a_substituted_source_outside_the_trees_is_refused_when_collecting(
        tmp_path: Path) -> None:
    """What only substitution reveals (an option's value, a link in the build tree) is
    checked when the stage is filled: the file's real path must lie in the trees."""
    from builder.execute.collect import CollectError, collect
    from builder.plan.payloads import CollectInstall

    state = tmp_path / "state"
    (state / "build").mkdir(parents=True)
    (state / ".builder-state").write_text("")
    (state / "build" / "out").symlink_to("/etc")
    src = tmp_path / "src"
    src.mkdir()
    for frm in ("/etc/hostname", str(state / "build" / "out" / "hostname"), "../x"):
        (tmp_path / "x").write_text("outside")
        with pytest.raises(CollectError, match="outside the recipe's source and build"):
            collect(CollectInstall(stage=str(state / "stage"), source=str(src),
                                   files=((frm, "share"),)))
    assert not (state / "stage" / "share").exists()
