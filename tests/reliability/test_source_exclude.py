"""Sources as they are: an upstream project that ships dangling links pointing outside its
tree (in a test-data folder) is refused with a message that suggests ``source.exclude``;
``exclude`` makes it buildable (the excluded files are neither inputs nor copied), and so
does a patch that deletes the links, since the source policy checks the tree as patched."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from builder.util.runner import RecordingRunner, Result
from tests.conftest import CliResult


class PatchingRunner(RecordingRunner):
    """Records every command, and really runs ``patch`` and ``git`` (the fetch step's)."""

    def run(self, argv: Sequence[str], **kw: object) -> Result:  # type: ignore[override]
        res = super().run(argv, **kw)  # type: ignore[arg-type]
        if Path(argv[0]).name in ("patch", "git"):
            return Result(subprocess.run(list(argv), capture_output=True, check=False,
                                         timeout=60).returncode)
        return res


@pytest.fixture
def upstream(project: Path) -> Path:
    """greet as upstream ships it: two dangling links out of the tree in test data."""
    data = project / "sources" / "greet" / "tests" / "data"
    data.mkdir(parents=True)
    os.symlink("../../../../../outside/a.bin", data / "a.bin")
    os.symlink("/nonexistent/builder-test/b.bin", data / "b.bin")
    (data / "keep.txt").write_text("data\n")
    return project


def _recipe(project: Path, source_extra: str) -> None:
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(recipe.read_text().replace(
        "source:\n  path: ../sources/greet\n", f"source:\n  path: ../sources/greet\n"
                                                f"{source_extra}"))


def _build(cli: Callable[..., CliResult], project: Path, state: Path) -> CliResult:
    return cli("--state-dir", str(state), "build", "greet", cwd=project,
               runner=PatchingRunner())


def test_links_out_are_refused_with_a_hint_to_exclude(upstream: Path, tmp_path: Path,
                                                      cli: Callable[..., CliResult]) -> None:
    r = _build(cli, upstream, tmp_path / "s")
    assert r.code == 4 and "tests/data/a.bin" in r.err, r.err
    assert 'exclude: ["tests/data/a.bin"]' in r.err, r.err


def test_exclude_makes_it_buildable_and_excluded_files_are_no_inputs(
        upstream: Path, tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    _recipe(upstream, '  exclude: ["tests/data/*.bin", "docs"]\n')
    docs = upstream / "sources" / "greet" / "docs"
    docs.mkdir()
    (docs / "README").write_text("one\n")
    r = _build(cli, upstream, tmp_path / "s")
    assert r.code == 0, r.out + r.err
    copies = list((tmp_path / "s" / "sources").glob("*/tests/data"))
    assert copies and sorted(p.name for p in copies[0].iterdir()) == ["keep.txt"]
    assert not (copies[0].parent.parent / "docs").exists(), "an excluded folder was copied"
    assert _build(cli, upstream, tmp_path / "s").out.startswith("nothing to do")
    (docs / "README").write_text("two\n")  # excluded: not an input
    assert _build(cli, upstream, tmp_path / "s").out.startswith("nothing to do")
    (upstream / "sources" / "greet" / "tests" / "data" / "keep.txt").write_text("new\n")
    assert not _build(cli, upstream, tmp_path / "s").out.startswith("nothing to do")


def test_a_patch_that_deletes_the_links_makes_it_buildable(
        upstream: Path, tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    if shutil.which("patch") is None:
        pytest.skip("needs GNU patch")
    patch = upstream / "recipes" / "drop-links.patch"
    patch.write_text(
        "diff --git a/tests/data/a.bin b/tests/data/a.bin\n"
        "deleted file mode 120000\n--- a/tests/data/a.bin\n+++ /dev/null\n@@ -1 +0,0 @@\n"
        "-../../../../../outside/a.bin\n\\ No newline at end of file\n"
        "diff --git a/tests/data/b.bin b/tests/data/b.bin\n"
        "deleted file mode 120000\n--- a/tests/data/b.bin\n+++ /dev/null\n@@ -1 +0,0 @@\n"
        "-/nonexistent/builder-test/b.bin\n\\ No newline at end of file\n")
    _recipe(upstream, "  patches: [drop-links.patch]\n")
    r = _build(cli, upstream, tmp_path / "s")
    assert r.code == 0, r.out + r.err
    data = next((tmp_path / "s" / "sources").glob("*/tests/data"))
    assert sorted(p.name for p in data.iterdir()) == ["keep.txt"]


def test_a_git_source_is_pruned_before_the_policy_and_the_patches(
        upstream: Path, tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    repo = tmp_path / "repo"
    shutil.copytree(upstream / "sources" / "greet", repo, symlinks=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, text=True,
                         capture_output=True).stdout.strip()
    recipe = upstream / "recipes" / "greet.yaml"
    git_source = f"source:\n  git: {repo}\n  rev: {rev}\n"
    recipe.write_text(recipe.read_text().replace("source:\n  path: ../sources/greet\n",
                                                 git_source))
    r = _build(cli, upstream, tmp_path / "s")
    assert r.code == 1 and "tests/data/a.bin" in r.err and "exclude" in r.err, r.err
    recipe.write_text(recipe.read_text().replace(git_source, git_source +
                                                 '  exclude: ["tests/data/*.bin"]\n'))
    r = _build(cli, upstream, tmp_path / "s")
    assert r.code == 0, r.out + r.err
    data = next((tmp_path / "s" / "sources").glob("*/tests/data"))
    assert sorted(p.name for p in data.iterdir()) == ["keep.txt"]
