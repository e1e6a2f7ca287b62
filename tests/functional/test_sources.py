"""git and url sources: pinned, verified, extracted safely, patched (all local, no network)."""

from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from builder.errors import FetchError
from builder.source.fetch import extract
from builder.util.runner import RecordingRunner
from tests.functional.conftest import need

pytestmark = pytest.mark.functional

RECIPE = """\
package:
  name: greet
  version: "1.0.0"
source:
{source}
options:
  loud: {{type: bool, default: false, cmake: GREET_LOUD}}
backends:
  cpu: {{}}
"""


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
                               "PATH": "/usr/bin:/bin"}).stdout.strip()


def _greet_repo(project: Path, tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "greet-repo"
    shutil.copytree(project / "sources" / "greet", repo)
    _git("init", "-q", cwd=repo)
    _git("add", ".", cwd=repo)
    _git("commit", "-qm", "greet", cwd=repo)
    return repo, _git("rev-parse", "HEAD", cwd=repo)


def test_git_source_pinned_to_a_commit_with_a_patch(project: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    need("git", "patch", "conan", "cmake", "ninja")
    repo, rev = _greet_repo(project, tmp_path)
    (project / "recipes" / "greet.yaml").write_text(RECIPE.format(
        source=f"  git: {repo}\n  rev: {rev}\n  patches: [hi.patch]"))
    (project / "recipes" / "hi.patch").write_text(
        "--- a/src/greet.cpp\n+++ b/src/greet.cpp\n@@ -4,3 +4,3 @@\n #ifdef GREET_LOUD\n"
        '-  return "HELLO, " + who + "!";\n+  return "HI, " + who + "!";\n #else\n')
    r = cli("build", "app", "-o", "greet:loud=true", cwd=project)
    assert r.code == 0, r.out + r.err
    [exe] = (project / ".builder" / "install" / "app").glob("*/bin/app")
    assert subprocess.run([exe, "x"], capture_output=True, text=True,
                          check=False).stdout == "HI, x!\n"
    [src] = (project / ".builder" / "sources").iterdir()
    assert _git("rev-parse", "HEAD", cwd=src) == rev
    # fetched once: the next build does not clone again
    rec = RecordingRunner()
    assert cli("build", "app", "-o", "greet:loud=true", cwd=project, runner=rec).code == 0
    assert rec.calls == []


def test_patch_that_does_not_apply_fails_the_step(project: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    need("git", "patch")
    repo, rev = _greet_repo(project, tmp_path)
    (project / "recipes" / "greet.yaml").write_text(RECIPE.format(
        source=f"  git: {repo}\n  rev: {rev}\n  patches: [bad.patch]"))
    (project / "recipes" / "bad.patch").write_text(
        "--- a/src/greet.cpp\n+++ b/src/greet.cpp\n@@ -1,1 +1,1 @@\n-no such line\n+x\n")
    r = cli("build", "greet", cwd=project, runner=None)
    assert r.code == 1 and "a patch does not apply cleanly" in r.err
    assert not any((project / ".builder" / "sources").glob("*[!l]"))  # no half source


def _tarball(tmp_path: Path, members: dict[str, bytes]) -> Path:
    path = tmp_path / "src.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def test_url_source_verified_and_extracted(project: Path, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    need("conan", "cmake", "ninja")
    src = project / "sources" / "greet"
    members = {f"greet-1.0/{p.relative_to(src).as_posix()}": p.read_bytes()
               for p in src.rglob("*") if p.is_file()}
    archive = _tarball(tmp_path, members)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    recipe = project / "recipes" / "greet.yaml"
    recipe.write_text(RECIPE.format(source=f"  url: file://{archive}\n  sha256: {'a' * 64}"))
    bad = cli("build", "greet", cwd=project)
    assert bad.code == 1
    assert f"expected: {'a' * 64}" in bad.err and f"actual:   {digest}" in bad.err
    assert "nothing was extracted" in bad.err
    assert not (project / ".builder" / "sources").exists() or not any(
        (project / ".builder" / "sources").iterdir())
    recipe.write_text(RECIPE.format(source=f"  url: file://{archive}\n  sha256: {digest}"))
    ok = cli("build", "greet", cwd=project)
    assert ok.code == 0, ok.out + ok.err


@pytest.mark.parametrize(("name", "why"), [("../evil.txt", "outside the source folder"),
                                           ("/abs/evil.txt", "outside the source folder")])
def test_unsafe_archive_members_are_refused(tmp_path: Path, name: str, why: str) -> None:
    archive = _tarball(tmp_path, {"ok.txt": b"fine", name: b"evil"})
    (tmp_path / ".builder-state").write_text("")  # builder's folder (the writer)
    with pytest.raises(FetchError, match=why) as e:
        extract(archive, tmp_path / "out")
    assert name in str(e.value)


def test_links_out_of_the_tree_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "l.tar"
    with tarfile.open(path, "w") as tf:
        info = tarfile.TarInfo("link")
        info.type = tarfile.SYMTYPE
        info.linkname = "../../etc/passwd"
        tf.addfile(info)
    (tmp_path / ".builder-state").write_text("")  # builder's folder (the writer)
    with pytest.raises(FetchError, match="refusing link 'link'"):
        extract(path, tmp_path / "out")
