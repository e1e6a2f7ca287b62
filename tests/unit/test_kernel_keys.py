"""The keys of kernel artifacts (builder.resolve.kernelsteps): the toolchain by content,
and an artifact found by what its compile read (its record in the kernel cache,
builder.workspace.state) rather than by its whole source folder — without compilers."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

from builder.host.facts import HostFacts
from builder.plan.model import BuildPlan
from builder.plan.payloads import KernelEntry
from builder.recipe.recipeset import RecipeSet
from builder.resolve.request import OptionOverride, Request
from builder.resolve.resolver import resolve
from builder.source.digest import StatCache
from builder.workspace.paths import Workspace
from builder.workspace.state import read_state
from tests.conftest import REPO, host

ENV = (("HOME", "/home/user"),)


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    shutil.copytree(REPO / "tests" / "fixtures" / "project", project)
    return project


def _plan(project: Path, facts: HostFacts | None = None) -> BuildPlan:
    ws = Workspace.at(project)
    rs = RecipeSet.load(ws.recipes_dir)
    roots = rs.select(["kern"], ws.recipes_dir)
    root = OptionOverride("kern", "root", str(project / "kroot"))
    return resolve(roots, rs, Request(env=ENV, backends=("cuda",), options=(root,)),
                   facts or host("linux-cuda13"), read_state(ws, rs.closure(roots)), ws)


def _kernels(plan: BuildPlan) -> dict[str, tuple[str, str]]:
    """kernel step name → (its key, its status)."""
    return {s.id.rsplit("/", 1)[1]: (s.inputs_hash, s.status) for s in plan.steps
            if s.kind == "kernel"}


def _with_identity(facts: HostFacts, name: str, identity: str) -> HostFacts:
    return replace(facts, tools=tuple(replace(t, identity=identity) if t.name == name else t
                                      for t in facts.tools))


def test_a_compiler_of_another_content_is_another_artifact(tmp_path: Path) -> None:
    project = _project(tmp_path)
    facts = host("linux-cuda13")
    base = _kernels(_plan(project, facts))
    assert set(base) == {"kernel:scale:sm_75", "kernel:scale:sm_80", "kernel:tile:sm_80"}
    # the same version string, another binary (or a wrapper's upgraded target)
    swapped = _kernels(_plan(project, _with_identity(facts, "nvcc", "another nvcc")))
    assert all(swapped[n][0] != base[n][0] for n in base)
    host_cxx = _kernels(_plan(project, _with_identity(facts, "cxx", "another g++")))
    assert all(host_cxx[n][0] != base[n][0] for n in base)
    # a tool the kernels do not use changes nothing
    assert _kernels(_plan(project, _with_identity(facts, "cmake", "another cmake"))) == base


def _entry(p: Path) -> list[object]:
    st = p.stat()
    return [str(p), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino,
            StatCache().sha256(p, st)]


def _compiled(plan: BuildPlan, reads: dict[str, list[Path]]) -> None:
    """The kernel cache as the compile steps leave it: each artifact, and its record of
    reading ``reads[step name]``."""
    for s in plan.steps:
        name = s.id.rsplit("/", 1)[1]
        if s.kind != "kernel" or s.status != "build":
            continue
        ke = s.payload
        assert isinstance(ke, KernelEntry) and ke.config and ke.depfile.startswith(ke.partial)
        entry = Path(ke.entry)
        entry.mkdir(parents=True)
        (entry / Path(s.outputs[0]).name).write_text(f"artifact of {name}\n")
        record = {"inputs": [_entry(p) for p in reads[name]],
                  "names": sorted([root, digest] for root, digest in ke.names)}
        (entry / "record.json").write_text(json.dumps(
            {"config": ke.config, "key": ke.key, "record": record}))


def test_an_artifact_is_found_by_what_its_compile_read(tmp_path: Path) -> None:
    project = _project(tmp_path)
    src = project / "sources" / "kern"
    common = src / "common.h"
    common.write_text("#define TILE 4\n")
    reads = {"kernel:scale:sm_75": [src / "scale.cu"], "kernel:scale:sm_80": [src / "scale.cu"],
             "kernel:tile:sm_80": [src / "tile.cu", common]}
    first = _plan(project)
    assert {st for _, st in _kernels(first).values()} == {"build"}
    _compiled(first, reads)
    built = _kernels(first)
    assert {n: st for n, (_, st) in _kernels(_plan(project)).items()} == dict.fromkeys(
        built, "cached")

    # a file of the folder that no kernel read (the ROCm source): every artifact stays
    (src / "scale.hip").write_text((src / "scale.hip").read_text() + "// edited\n")
    assert _kernels(_plan(project)) == {n: (k, "cached") for n, (k, _) in built.items()}

    # the header only tile reads: tile is compiled again, scale is not
    common.write_text("#define TILE 8\n")
    edited = _plan(project)
    now = _kernels(edited)
    assert now["kernel:tile:sm_80"][1] == "build"
    assert now["kernel:tile:sm_80"][0] != built["kernel:tile:sm_80"][0]
    assert {n: now[n] for n in ("kernel:scale:sm_75", "kernel:scale:sm_80")} == {
        n: (built[n][0], "cached") for n in ("kernel:scale:sm_75", "kernel:scale:sm_80")}
    _compiled(edited, reads)

    # back as it was: the first artifact matches again, nothing to compile
    common.write_text("#define TILE 4\n")
    assert _kernels(_plan(project)) == {n: (k, "cached") for n, (k, _) in built.items()}

    # a new file in the folder may shadow what a kernel read: every kernel is checked anew
    (src / "scale.h").write_text("\n")
    assert {st for _, st in _kernels(_plan(project)).values()} == {"build"}


def test_a_damaged_or_foreign_record_is_no_artifact(tmp_path: Path) -> None:
    project = _project(tmp_path)
    src = project / "sources" / "kern"
    first = _plan(project)
    _compiled(first, {n: [src / "scale.cu", src / "tile.cu"] for n in _kernels(first)})
    (src / "scale.hip").write_text("// edited\n")
    entries = sorted((project / ".builder" / "kernels").glob("*/record.json"))
    assert len(entries) == 3
    entries[0].write_text("{not json")
    data = json.loads(entries[1].read_text())
    entries[1].write_text(json.dumps({**data, "key": "0" * 64}))  # names another entry
    statuses = sorted(st for _, st in _kernels(_plan(project)).values())
    assert statuses == ["build", "build", "cached"]
