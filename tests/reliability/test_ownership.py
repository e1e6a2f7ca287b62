"""builder writes into, replaces or deletes only what it created: kernel install trees
carry a marker (or are in the state folder's registry), a state folder carries a marker
(or holds only builder's names); anything else is refused before it is touched."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from builder.util.runner import RecordingRunner, Result
from builder.workspace.ownership import STATE_MARKER, TREE_MARKER
from tests.conftest import CliResult

REFUSED = 7


class WritingRunner(RecordingRunner):
    """Records argv and writes what a compiler would (`-o FILE`), so that kernel
    recipes reach their publish step without nvcc."""

    def run(self, argv: Sequence[str], **kw: object) -> Result:  # type: ignore[override]
        res = super().run(argv, **kw)  # type: ignore[arg-type]
        args = list(argv)
        if "-o" in args:
            out = Path(args[args.index("-o") + 1])
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(f"// {' '.join(args[:3])}\n.version 8.0\n")
        return res


@pytest.fixture
def kern(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if shutil.which("nvcc") is None:
        pytest.skip("the kernel fixture needs nvcc on PATH to be planned (CI installs it)")
    monkeypatch.delenv("KERN_ROOT", raising=False)
    return project


def build(cli: Callable[..., CliResult], project: Path, state: Path, *args: str) -> CliResult:
    return cli("--state-dir", str(state), "build", "kern", "--backend", "cuda", *args,
               cwd=project, runner=WritingRunner())


def tree_files(p: Path) -> dict[str, bytes]:
    return {q.relative_to(p).as_posix(): q.read_bytes() for q in sorted(p.rglob("*"))
            if q.is_file()}


def test_a_foreign_folder_at_the_kernel_tree_is_refused(kern: Path, tmp_path: Path,
                                                        cli: Callable[..., CliResult]) -> None:
    root = tmp_path / "v"
    (root / "cuda").mkdir(parents=True)
    (root / "cuda" / "IMPORTANT").write_text("not builder's")
    r = build(cli, kern, tmp_path / "state", "-o", f"root={root}")
    assert r.code == REFUSED, r.out + r.err
    assert str(root / "cuda") in r.err and "fix:" in r.err
    assert (root / "cuda" / "IMPORTANT").read_text() == "not builder's"
    assert sorted(p.name for p in root.iterdir()) == ["cuda"]  # not even a temporary
    assert not (tmp_path / "state" / "kernels").exists()  # refused before any step ran


def test_a_file_at_the_kernel_tree_is_refused(kern: Path, tmp_path: Path,
                                              cli: Callable[..., CliResult]) -> None:
    root = tmp_path / "v"
    root.mkdir()
    (root / "cuda").write_text("a file")
    r = build(cli, kern, tmp_path / "state", "-o", f"root={root}")
    assert r.code == REFUSED and (root / "cuda").read_text() == "a file"


@pytest.mark.parametrize("value", ["", "relative/k", ".", "/"])
def test_install_roots_must_be_absolute(kern: Path, tmp_path: Path, value: str,
                                        cli: Callable[..., CliResult],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "cwd"
    (work / "cuda").mkdir(parents=True)
    (work / "cuda" / "keep").write_text("x")
    r = build(cli, kern, tmp_path / "state", "-o", f"root={value}")
    assert r.code == 4, r.out + r.err
    assert "install.root" in r.err and "fix:" in r.err
    assert (work / "cuda" / "keep").read_text() == "x"
    assert not (kern / "cuda").exists() and not (kern / "relative").exists()


def test_an_unset_env_in_the_install_root_is_an_error(kern: Path, tmp_path: Path,
                                                      cli: Callable[..., CliResult],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    recipe = kern / "recipes" / "kern.yaml"
    recipe.write_text(recipe.read_text().replace('root: "${options.root}"',
                                                 'root: "${env.KERN_TEST_ROOT}"'))
    monkeypatch.delenv("KERN_TEST_ROOT", raising=False)
    r = build(cli, kern, tmp_path / "state")
    # an unset variable is a recipe error at its place (never an empty root)
    assert r.code == 3 and "kern.yaml:" in r.err and "${env.KERN_TEST_ROOT} is not set" \
        in r.err, r.err
    monkeypatch.setenv("KERN_TEST_ROOT", str(tmp_path / "k"))
    r = build(cli, kern, tmp_path / "state")
    assert r.code == 0, r.out + r.err
    assert (tmp_path / "k" / "cuda" / TREE_MARKER).is_file()


def test_builder_replaces_its_own_trees(kern: Path, tmp_path: Path,
                                        cli: Callable[..., CliResult]) -> None:
    root, state = tmp_path / "k", tmp_path / "state"
    assert build(cli, kern, state, "-o", f"root={root}").code == 0
    assert (root / "cuda" / TREE_MARKER).is_file()
    first = tree_files(root / "cuda")
    (kern / "sources" / "kern" / "scale.cu").write_text("// changed\n")
    r = build(cli, kern, state, "-o", f"root={root}")
    assert r.code == 0, r.out + r.err
    assert tree_files(root / "cuda") != first and (root / "cuda" / TREE_MARKER).is_file()
    # a tree published before the marker existed: listed in the registry, with a manifest
    (root / "cuda" / TREE_MARKER).unlink()
    (kern / "sources" / "kern" / "scale.cu").write_text("// changed again\n")
    assert build(cli, kern, state, "-o", f"root={root}").code == 0
    # the same tree, neither marked nor registered (an older builder's, another state
    # folder's): adopted while it holds exactly what its manifest lists ...
    (root / "cuda" / TREE_MARKER).unlink()
    (state / "kernel-installs.json").write_text("{}")
    (kern / "sources" / "kern" / "scale.cu").write_text("// and again\n")
    assert build(cli, kern, state, "-o", f"root={root}").code == 0
    # ... and refused once it holds anything else
    (root / "cuda" / TREE_MARKER).unlink()
    (state / "kernel-installs.json").write_text("{}")
    (root / "cuda" / "notes.txt").write_text("mine")
    (kern / "sources" / "kern" / "scale.cu").write_text("// once more\n")
    assert build(cli, kern, state, "-o", f"root={root}").code == REFUSED
    assert (root / "cuda" / "notes.txt").read_text() == "mine"


def ordinary_folder(p: Path) -> dict[str, bytes]:
    for name in ("sources", "install", "stage", "wheels"):
        (p / name).mkdir(parents=True)
        (p / name / "mine.txt").write_text(name)
    return tree_files(p)


@pytest.mark.parametrize("command", [["cache", "prune"], ["cache", "prune", "--dry-run"],
                                     ["cache", "info"], ["build", "greet"], ["plan", "greet"],
                                     ["lock", "greet"], ["report"], ["host"]])
def test_an_ordinary_folder_is_never_used_as_state(project: Path, tmp_path: Path,
                                                   command: list[str],
                                                   cli: Callable[..., CliResult]) -> None:
    folder = tmp_path / "mine"
    before = ordinary_folder(folder)
    r = cli("--state-dir", str(folder), *command, cwd=project, runner=RecordingRunner())
    assert r.code == REFUSED, r.out + r.err
    assert "not a builder state folder" in r.err and "--state-dir" in r.err
    assert tree_files(folder) == before and sorted(os.listdir(folder)) == sorted(
        ["sources", "install", "stage", "wheels"])


def test_a_state_dir_that_is_a_file_is_refused(project: Path, tmp_path: Path,
                                               cli: Callable[..., CliResult]) -> None:
    f = tmp_path / "state"
    f.write_text("mine")
    for command in (["cache", "prune"], ["build", "greet"], ["plan", "greet"]):
        r = cli("--state-dir", str(f), *command, cwd=project, runner=RecordingRunner())
        assert r.code == REFUSED and "not a folder" in r.err and f.read_text() == "mine"


def test_new_and_empty_state_folders_are_used(project: Path, tmp_path: Path,
                                              cli: Callable[..., CliResult]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for state in (tmp_path / "new" / "deep", empty):
        r = cli("--state-dir", str(state), "build", "greet", cwd=project,
                runner=RecordingRunner())
        assert r.code == 0, r.out + r.err
        assert (state / STATE_MARKER).is_file()
        r = cli("--state-dir", str(state), "cache", "prune", cwd=project)
        assert r.code == 0, r.out + r.err


@pytest.mark.parametrize("command", [["cache", "prune"], ["build", "greet"]])
def test_a_folder_with_builders_names_but_no_marker_is_refused(
        project: Path, tmp_path: Path, command: list[str],
        cli: Callable[..., CliResult]) -> None:
    """``build/ install/ logs/`` and an empty ``lock`` look like a state folder; without
    builder's marker they are a user's, and nothing in them is touched."""
    folder = tmp_path / "mine"
    for name in ("build", "install", "logs"):
        (folder / name / "x").mkdir(parents=True)
        (folder / name / "x" / "mine.txt").write_text(name)
    (folder / "lock").write_text("")
    (folder / "host.json").write_text("{}")
    before = tree_files(folder)
    r = cli("--state-dir", str(folder), *command, cwd=project, runner=RecordingRunner())
    assert r.code == REFUSED, r.out + r.err
    assert "no .builder-state marker" in r.err
    assert tree_files(folder) == before


def test_prune_of_a_real_state_folder_keeps_foreign_files_out(project: Path, tmp_path: Path,
                                                              cli: Callable[..., CliResult]
                                                              ) -> None:
    """A state folder that someone later puts a file of their own into is refused as a
    whole: builder does not guess which entries are its own."""
    state = tmp_path / "state"
    assert cli("--state-dir", str(state), "build", "greet", cwd=project,
               runner=RecordingRunner()).code == 0
    (state / STATE_MARKER).unlink()
    (state / "notes.txt").write_text("mine")
    r = cli("--state-dir", str(state), "cache", "prune", cwd=project)
    assert r.code == REFUSED and (state / "notes.txt").read_text() == "mine"
    assert json.loads((state / "last-build.json").read_text())  # nothing was removed


def test_a_tree_published_before_markers_is_adopted_only_when_intact(tmp_path: Path) -> None:
    """A kernel tree an older builder (or another state folder) published has no marker and
    is in no registry here: it is builder's only if it holds exactly what its manifest lists."""
    import hashlib
    import json

    from builder.errors import OwnershipError
    from builder.workspace.ownership import check_tree

    tree = tmp_path / "cuda"
    (tree / "k").mkdir(parents=True)
    ptx = tree / "k" / "sm_80.ptx"
    ptx.write_text(".version 9.0\n")
    entry = {"path": "k/sm_80.ptx", "size": ptx.stat().st_size,
             "sha256": hashlib.sha256(ptx.read_bytes()).hexdigest()}
    (tree / "manifest.json").write_text(json.dumps(
        {"key": "abc", "variant": "kern/cuda-release-abc", "artifacts": [entry],
         "files": [entry], "published": "2026-11-23T00:00:00Z"}))
    check_tree(tree, {})  # intact: adopted, nothing raised
    (tree / "k" / "mine.txt").write_text("a user's file")
    with pytest.raises(OwnershipError):
        check_tree(tree, {})
    (tree / "k" / "mine.txt").unlink()
    ptx.write_text(".version 9.1\n")  # same size, other content: not what builder wrote
    with pytest.raises(OwnershipError):
        check_tree(tree, {})


def test_a_users_file_in_a_published_tree_survives_a_republish(
        kern: Path, tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    """Publishing replaces only what the tree's manifest lists."""
    root, state = tmp_path / "k", tmp_path / "state"
    assert build(cli, kern, state, "-o", f"root={root}").code == 0
    (root / "cuda" / "README.txt").write_text("my notes")
    (root / "cuda" / "scale" / "mine.cu").write_text("// my kernel")
    (kern / "sources" / "kern" / "scale.cu").write_text("// changed\n")
    r = build(cli, kern, state, "-o", f"root={root}")
    assert r.code == 0, r.out + r.err
    assert (root / "cuda" / "README.txt").read_text() == "my notes"
    assert (root / "cuda" / "scale" / "mine.cu").read_text() == "// my kernel"
    listed = {f["path"] for f in json.loads((root / "cuda" / "manifest.json").read_text())[
        "files"]}
    assert "README.txt" not in listed and "scale/mine.cu" not in listed
    assert sorted(p.name for p in root.iterdir()) == ["cuda"]  # no temporary left


def test_a_published_tree_is_readable_by_others(kern: Path, tmp_path: Path,
                                                cli: Callable[..., CliResult]) -> None:
    root = tmp_path / "k"
    old = os.umask(0o022)
    try:
        assert build(cli, kern, tmp_path / "state", "-o", f"root={root}").code == 0
    finally:
        os.umask(old)
    tree = root / "cuda"
    assert tree.stat().st_mode & 0o777 == 0o755
    for p in tree.rglob("*"):
        assert p.stat().st_mode & 0o055 == 0o044 if p.is_file() else \
            p.stat().st_mode & 0o777 == 0o755, p


def test_two_recipes_may_not_share_an_install_root(kern: Path, tmp_path: Path,
                                                   cli: Callable[..., CliResult]) -> None:
    text = (kern / "recipes" / "kern.yaml").read_text()
    (kern / "recipes" / "kern2.yaml").write_text(text.replace("name: kern", "name: kern2"))
    root = tmp_path / "shared"
    for command in (["plan"], ["build"]):
        r = cli("--state-dir", str(tmp_path / "state"), *command, "kern", "kern2",
                "--backend", "cuda", "-o", f"root={root}", cwd=kern, runner=WritingRunner())
        assert r.code != 0, r.out + r.err
        assert "kern.yaml:" in r.err and "kern2.yaml:" in r.err, r.err
        assert str(root / "cuda") in r.err
    assert not root.exists()
