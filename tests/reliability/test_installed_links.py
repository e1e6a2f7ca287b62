"""An install as made: a shared library with a SOVERSION installs links
(``libgreet.so -> libgreet.so.0 -> libgreet.so.0.1``).  The manifest records each link
with its target; ``builder verify`` accepts a fresh install and fails a deleted or
retargeted link, and the next build repairs it.  A published kernel tree that was deleted
is reported by ``verify``, not skipped."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from builder.util.runner import RecordingRunner, Result
from tests.conftest import CliResult


class SonameRunner(RecordingRunner):
    """`cmake --install … --prefix P` writes a versioned shared library and its links."""

    def run(self, argv: Sequence[str], **kw: object) -> Result:  # type: ignore[override]
        res = super().run(argv, **kw)  # type: ignore[arg-type]
        args = list(argv)
        if "--install" in args and "--prefix" in args:
            lib = Path(args[args.index("--prefix") + 1]) / "lib"
            lib.mkdir(parents=True, exist_ok=True)
            (lib / "libgreet.so.0.1").write_bytes(b"\x7fELF" + b"0" * 64)
            os.symlink("libgreet.so.0.1", lib / "libgreet.so.0")
            os.symlink("libgreet.so.0", lib / "libgreet.so")
        return res


def _build(cli: Callable[..., CliResult], project: Path, state: Path) -> CliResult:
    r = cli("--state-dir", str(state), "build", "greet", cwd=project, runner=SonameRunner())
    assert r.code == 0, r.out + r.err
    return r


def test_links_are_recorded_verified_and_repaired(project: Path, tmp_path: Path,
                                                  cli: Callable[..., CliResult]) -> None:
    state = tmp_path / "state"
    _build(cli, project, state)
    lib = next((state / "install").glob("greet/*/lib"))
    manifest = json.loads((lib.parent / "manifest.json").read_text())
    assert {"path": "lib/libgreet.so", "target": "libgreet.so.0"} in manifest["links"]
    r = cli("--state-dir", str(state), "verify", cwd=project)
    assert r.code == 0 and "0 with problems" in r.out, r.out  # a fresh install is good
    assert _build(cli, project, state).out.startswith("nothing to do")

    (lib / "libgreet.so.0").unlink()
    os.symlink("libgreet.so.9", lib / "libgreet.so.0")  # retargeted
    (lib / "libgreet.so").unlink()  # deleted
    r = cli("--state-dir", str(state), "verify", cwd=project)
    assert r.code == 1, r.out
    assert "lib/libgreet.so.0: points to libgreet.so.9, recorded libgreet.so.0.1" in r.out
    assert "lib/libgreet.so: missing" in r.out
    r = _build(cli, project, state)
    assert not r.out.startswith("nothing to do"), "a broken link counted as installed"
    lib = next((state / "install").glob("greet/*/lib"))
    assert os.readlink(lib / "libgreet.so") == "libgreet.so.0"
    assert cli("--state-dir", str(state), "verify", cwd=project).code == 0


def test_a_deleted_kernel_tree_fails_verify(project: Path, tmp_path: Path,
                                            cli: Callable[..., CliResult]) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / ".builder-state").write_text("builder\n")
    tree = tmp_path / "kernels-out"
    (state / "kernel-installs.json").write_text(json.dumps({str(tree): "k" * 64}))
    tree.mkdir()
    (tree / "manifest.json").write_text(json.dumps({"key": "k" * 64, "files": []}))
    r = cli("--state-dir", str(state), "verify", cwd=project)
    assert r.code == 0 and "1 tree(s) checked" in r.out, r.out
    shutil.rmtree(tree)
    r = cli("--state-dir", str(state), "verify", cwd=project)
    assert r.code == 1, r.out
    assert f"BAD  {tree}" in r.out and "missing" in r.out and "1 with problems" in r.out
