"""The binary remote's pure parts: planning downloads, reading Conan listings, naming
what went wrong, and checking downloaded files against their published hashes."""

from __future__ import annotations

from pathlib import Path

from builder.plan.model import BUILD, CACHED, DOWNLOAD
from builder.recipe.recipeset import RecipeSet
from builder.remote import conan as remote
from builder.resolve.request import Request
from builder.resolve.resolver import resolve
from builder.workspace.paths import Workspace
from builder.workspace.state import read_state
from tests.conftest import host


def _plan(project: Path, names: list[str], keys: frozenset[str] = frozenset(),
          facts: str = "linux-cuda13", **req: object):  # type: ignore[no-untyped-def]
    ws = Workspace.at(project)
    rs = RecipeSet.load(ws.recipes_dir)
    roots = rs.select(names, ws.recipes_dir)
    state = read_state(ws, rs.closure(roots))
    from dataclasses import replace

    return resolve(roots, rs, Request(env=(("HOME", "/home/user"),), **req),  # type: ignore[arg-type]
                   host(facts), replace(state, remote_keys=keys), ws)


def test_published_variants_are_planned_as_downloads(project: Path) -> None:
    first = _plan(project, ["app"])
    greet = next(v for v in first.variants if v.recipe == "greet")
    app = next(v for v in first.variants if v.recipe == "app")
    # only greet is on the remote: greet downloads, app still builds (against it)
    plan = _plan(project, ["app"], frozenset({greet.compile_key}), remote="team")
    by = {v.recipe: v for v in plan.variants}
    assert by["greet"].status == DOWNLOAD and "remote team" in by["greet"].reason
    assert by["app"].status == BUILD and by["app"].key == app.key  # keys do not move
    kinds = [s.kind for s in plan.steps_of(by["greet"].id)]
    assert kinds == ["download", "publish"]  # no compile, no tests
    dl = plan.step(f"{by['greet'].id}/download")
    assert dl.status == DOWNLOAD
    assert [c[1] for c in dl.commands] == ["download", "download"]
    assert dl.commands[0][2] == "greet/1.0.0#*:*"
    assert dl.commands[1][2] == "greet-artifacts/1.0.0#*:*"
    assert f"options.builder_key={greet.compile_key}" in dl.commands[0]
    assert dl.commands[0][-2:] == ("-r", "team")
    pub = plan.step(f"{by['greet'].id}/publish")
    assert pub.deps == (dl.id,) and pub.status == DOWNLOAD
    assert f"{by['greet'].id}/publish" in plan.step(f"{by['app'].id}/render").deps
    # without --remote the same keys change nothing
    assert _plan(project, ["app"], frozenset({greet.compile_key})).counts()[DOWNLOAD] == 0


def test_kernel_variants_download_their_cache_entries(project: Path) -> None:
    first = _plan(project, ["kern"])
    v = first.variants[0]
    entries = [s.payload.entry for s in first.steps_of(v.id) if s.kind == "kernel"]
    assert entries
    plan = _plan(project, ["kern"], frozenset({v.compile_key}), remote="team")
    steps = plan.steps_of(plan.variants[0].id)
    assert [s.kind for s in steps] == ["download", "publish-kernels"]

    assert list(steps[0].payload.kernel_entries) == entries
    assert len(steps[0].commands) == 1  # only the artifacts package: no Conan package


def test_keys_in_a_conan_listing() -> None:
    listing = {"team": {"greet-artifacts/1.0.0": {"revisions": {"r1": {"packages": {
        "p1": {"info": {"options": {"builder_key": "k1"}}},
        "p2": {"info": {"options": {}}}}}, "r2": {"packages": {
            "p3": {"info": {"options": {"builder_key": "k3"}}}}}}}}}
    assert remote.keys_in(listing) == {"k1", "k3"}
    assert remote.keys_in({"team": {"error": "Recipe not found"}}) == set()


def test_explain_names_the_cause_and_the_fix() -> None:
    why, fix = remote.explain("my-team", "ERROR: Wrong user or password. [Remote: my-team]")
    assert why == "refused the credentials"
    assert "CONAN_LOGIN_USERNAME_MY_TEAM" in fix and "CONAN_PASSWORD_MY_TEAM" in fix
    why, fix = remote.explain("t", "ERROR: HTTPConnectionPool(host='127.0.0.1', port=1): "
                                   "Max retries exceeded ... Connection refused")
    assert why.startswith("cannot be reached") and "--remote-optional" in fix
    why, _ = remote.explain("t", "ERROR: Permission denied for user: 'ci': ForbiddenException")
    assert "permission denied" in why
    # a port that contains 403 or 401 is not an HTTP status (this made CI flaky)
    why, _ = remote.explain("t", "ERROR: HTTPConnectionPool(host='127.0.0.1', port=40311): "
                                 "Max retries exceeded with url: http://127.0.0.1:40311/v2/ "
                                 "(Caused by NewConnectionError: [Errno 111] Connection refused)")
    assert why.startswith("cannot be reached")
    why, _ = remote.explain("t", "ERROR: 403: Forbidden. [Remote: t]")
    assert "permission denied" in why
    why, _ = remote.explain("t", "ERROR: 401 Unauthorized at http://h:4012/v2")
    assert why == "refused the credentials"
    why, _ = remote.explain("t", "something\nERROR: odd failure\n")
    assert why == "failed: ERROR: odd failure"


def test_verify_finds_changed_missing_and_extra_files(tmp_path: Path) -> None:
    art, pkg = tmp_path / "art", tmp_path / "pkg"
    (art / "wheels").mkdir(parents=True)
    (art / "wheels" / "x.whl").write_bytes(b"wheel")
    (pkg / "lib").mkdir(parents=True)
    (pkg / "lib" / "libx.a").write_bytes(b"lib")
    (pkg / "conaninfo.txt").write_text("conan's own; not ours to check")
    manifest = {"files": remote.tree_hashes(art), "package_files": remote.tree_hashes(pkg)}
    assert "conaninfo.txt" not in manifest["package_files"]
    assert remote.verify(manifest, art, pkg) == []
    (pkg / "lib" / "libx.a").write_bytes(b"lib, tampered")
    (art / "wheels" / "x.whl").unlink()
    (art / "extra").write_text("smuggled")
    bad = remote.verify(manifest, art, pkg)
    assert sorted(bad) == ["extra: not in the published list", "lib/libx.a: sha256 mismatch",
                           "wheels/x.whl: missing"]


def test_installed_variants_are_not_downloaded(project: Path) -> None:
    from dataclasses import replace

    v = _plan(project, ["greet"]).variants[0]
    ws = Workspace.at(project)
    rs = RecipeSet.load(ws.recipes_dir)
    state = replace(read_state(ws, rs.recipes), installed=frozenset({v.compile_key}),
                    done=frozenset({v.key}), remote_keys=frozenset({v.compile_key}))
    plan = resolve(rs.select(["greet"], ws.recipes_dir), rs,
                   Request(env=(("HOME", "/home/user"),), remote="team"),
                   host("linux-cuda13"), state, ws)
    assert plan.variants[0].status == CACHED
    assert remote.env_var("team-eu.1") == "TEAM_EU_1"
