"""A build is never stale: every input that can change a variant's outputs is in its key.
For each input: unchanged → "nothing to do"; changed → rebuilt (and the new value is
what the build uses)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from builder.util.runner import RecordingRunner, Result
from tests.conftest import CliResult


class StagingRunner(RecordingRunner):
    """Records argv; `cmake --install … --prefix P` writes a library into P."""

    def run(self, argv: Sequence[str], **kw: object) -> Result:  # type: ignore[override]
        res = super().run(argv, **kw)  # type: ignore[arg-type]
        args = list(argv)
        if "--install" in args and "--prefix" in args:
            lib = Path(args[args.index("--prefix") + 1]) / "lib" / "libgreet.a"
            lib.parent.mkdir(parents=True, exist_ok=True)
            lib.write_bytes(b"!<arch>\n" + b"0" * 64)
        return res


Build = Callable[..., tuple[CliResult, StagingRunner]]


@pytest.fixture
def build(project: Path, tmp_path: Path, cli: Callable[..., CliResult]) -> Build:
    def run(*args: str) -> tuple[CliResult, StagingRunner]:
        runner = StagingRunner()
        r = cli("--state-dir", str(tmp_path / "state"), "build", "greet", *args,
                cwd=project, runner=runner)
        assert r.code == 0, r.out + r.err
        return r, runner

    return run


def nothing_to_do(r: CliResult) -> bool:
    return r.out.startswith("nothing to do")


def edit(recipe: Path, old: str, new: str) -> None:
    text = recipe.read_text()
    assert old in text
    recipe.write_text(text.replace(old, new, 1))


ENV_PLACES = {
    "defines": ("backends:\n", 'defines:\n  GREET_X: "${env.GREET_X}"\nbackends:\n'),
    "backend defines": ("  cpu: {}\n", '  cpu:\n    defines:\n      GREET_X: "${env.GREET_X}"\n'),
    "backend flags": ("  cpu: {}\n", '  cpu:\n    flags:\n      common:\n        cxx: '
                      '["-DGX=${env.GREET_X}"]\n'),
    "cxx flags": ("    cxx: [-O2]", '    cxx: [-O2, "-DGX=${env.GREET_X}"]'),
    "c flags": ("    cxx: [-O2]", '    cxx: [-O2]\n    c: ["-DGX=${env.GREET_X}"]'),
    "ld flags": ("    cxx: [-O2]", '    cxx: [-O2]\n    ld: ["-Wl,--defsym=gx${env.GREET_X}=0"]'),
    "test argv": ("backends:\n", 'test:\n  - name: t\n    run: [echo, "${env.GREET_X}"]\n'
                  'backends:\n'),
    "test env": ("backends:\n", 'test:\n  - name: t\n    run: [echo]\n    env:\n'
                 '      V: "${env.GREET_X}"\nbackends:\n'),
}


def used_value(runner: StagingRunner, project: Path, value: str) -> bool:
    """The value reached a command, its environment or a generated file."""
    for c in runner.calls:
        if any(value in a for a in c.argv) or any(value in v for v in c.env_changes.values()):
            return True
    return any(value in p.read_text() for p in project.rglob("conan/profile"))


@pytest.mark.parametrize("place", sorted(ENV_PLACES))
def test_env_values_are_substituted_and_keyed(project: Path, build: Build, place: str,
                                              monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path,
                                              cli: Callable[..., CliResult]) -> None:
    edit(project / "recipes" / "greet.yaml", *ENV_PLACES[place])
    monkeypatch.setenv("GREET_X", "first111")
    r, runner = build()
    assert not nothing_to_do(r)
    state_profiles = tmp_path / "state"
    assert used_value(runner, state_profiles, "first111"), f"${{env.GREET_X}} in {place}"
    r, _ = build()
    assert nothing_to_do(r), r.out  # unchanged
    monkeypatch.setenv("GREET_X", "second22")
    r, runner = build()
    assert not nothing_to_do(r), f"changing GREET_X used in {place} rebuilt nothing"
    assert used_value(runner, state_profiles, "second22")
    monkeypatch.delenv("GREET_X")  # unset: an error at its place, never ""
    r = cli("--state-dir", str(tmp_path / "state"), "build", "greet", cwd=project,
            runner=StagingRunner())
    assert r.code == 3 and "${env.GREET_X} is not set" in r.err, r.err
    assert "greet.yaml:" in r.err and "${env.GREET_X:-" in r.err, r.err


SOURCE_EDITS = ["build/gen.h", "node_modules/x/y.h", "__pycache__/m.h", ".pytest_cache/v",
                "x.egg-info/PKG-INFO", ".builder/notes.h", "include/greet/greet.h",
                ".nox/a", "deep/build/a/b.h"]


@pytest.mark.parametrize("rel", SOURCE_EDITS)
def test_every_file_of_the_source_tree_is_keyed(project: Path, build: Build,
                                                rel: str) -> None:
    f = project / "sources" / "greet" / rel
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text("// one\n")
    build()
    assert nothing_to_do(build()[0])
    f.write_text("// two\n")  # same size
    assert not nothing_to_do(build()[0]), f"editing {rel} rebuilt nothing"
    f.chmod(0o755)
    assert not nothing_to_do(build()[0]), "the executable bit is an input"
    assert nothing_to_do(build()[0])


def test_vcs_metadata_and_state_folders_are_not_inputs(project: Path, build: Build,
                                                       tmp_path: Path) -> None:
    src = project / "sources" / "greet"
    if shutil.which("git") is None:
        pytest.skip("needs git")
    subprocess.run(["git", "init", "-q", str(src)], check=True)
    build()
    (src / ".git" / "description").write_text("changed")
    assert nothing_to_do(build()[0])
    # a builder state folder inside the tree (recognised by its marker, not its name)
    state = src / "any-name"
    state.mkdir()
    (state / ".builder-state").write_text("builder\n")
    (state / "host.json").write_text("{}")
    assert nothing_to_do(build()[0])


def test_symlink_targets_are_keyed(project: Path, build: Build) -> None:
    inc = project / "sources" / "greet" / "include" / "greet"
    (inc / "a.h").write_text("// a\n")
    (inc / "b.h").write_text("// b\n")
    os.symlink("a.h", inc / "cur.h")
    build()
    assert nothing_to_do(build()[0])
    (inc / "cur.h").unlink()
    os.symlink("b.h", inc / "cur.h")
    assert not nothing_to_do(build()[0]), "retargeting a link rebuilt nothing"
    os.symlink("greet", inc.parent / "alias")  # a link to a folder
    assert not nothing_to_do(build()[0])
    assert nothing_to_do(build()[0])


def test_a_same_size_corruption_of_an_install_rebuilds(project: Path, build: Build,
                                                       tmp_path: Path,
                                                       cli: Callable[..., CliResult]) -> None:
    build()
    state = tmp_path / "state"
    lib = next((state / "install").glob("greet/*/lib/libgreet.a"))
    r = cli("--state-dir", str(state), "verify", cwd=project)
    assert r.code == 0 and "0 with problems" in r.out, r.out
    st = lib.stat()
    data = bytearray(lib.read_bytes())
    data[-1] ^= 1
    lib.write_bytes(bytes(data))
    os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns))  # even with the old mtime
    r = cli("--state-dir", str(state), "verify", cwd=project)
    assert r.code == 1 and "libgreet.a: content differs" in r.out, r.out
    r, _ = build()
    assert not nothing_to_do(r), "a corrupted install counted as installed"
    assert cli("--state-dir", str(state), "verify", cwd=project).code == 0
    assert nothing_to_do(build()[0])


def test_options_and_recipe_edits_are_keyed(project: Path, build: Build) -> None:
    build()
    assert not nothing_to_do(build("-o", "loud=true")[0])
    assert nothing_to_do(build("-o", "loud=true")[0])
    edit(project / "recipes" / "greet.yaml", "cxx: [-O2]", "cxx: [-O3]")
    assert not nothing_to_do(build()[0])
    edit(project / "recipes" / "greet.yaml", "package:", "# a comment\npackage:")
    assert nothing_to_do(build()[0])  # a comment is not an input


def test_kernels_key_their_tree_and_substituted_flags(project: Path, tmp_path: Path,
                                                      cli: Callable[..., CliResult],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.reliability.test_ownership import WritingRunner

    if shutil.which("nvcc") is None:
        pytest.skip("the kernel fixture needs nvcc on PATH to be planned (CI installs it)")
    edit(project / "recipes" / "kern.yaml", "cuda: [-O3]", 'cuda: [-O3, "-DK=${env.KERN_K}"]')
    monkeypatch.setenv("KERN_K", "k1k1")

    def build() -> tuple[CliResult, WritingRunner]:
        runner = WritingRunner()
        r = cli("--state-dir", str(tmp_path / "state"), "build", "kern", "--backend", "cuda",
                "-o", f"root={tmp_path / 'k'}", cwd=project, runner=runner)
        assert r.code == 0, r.out + r.err
        return r, runner

    _, runner = build()
    assert any("-DK=k1k1" in c.argv for c in runner.calls), "kernel flags are substituted"
    assert nothing_to_do(build()[0])
    (project / "sources" / "kern" / "common.cuh").write_text("// a header\n")
    r, runner = build()
    assert not nothing_to_do(r) and runner.calls, "a new header rebuilt no kernel"
    assert nothing_to_do(build()[0])
    monkeypatch.setenv("KERN_K", "k2k2")
    _, runner = build()
    assert any("-DK=k2k2" in c.argv for c in runner.calls)
