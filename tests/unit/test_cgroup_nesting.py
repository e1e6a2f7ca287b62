"""A build started inside a capped cgroup stays under that cap: the budget sees the
tightest limit of every group above it, and the build's own group goes below the same
parent, never to the hierarchy's root (found on the GPU machine: a bench's 6 GiB cap,
builder in the cap's ``main`` leaf, peaked at 14.9 GB)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from builder.host.probe import tightest_limit
from builder.memory import cgroup


def _group(root: Path, rel: str, limit: str | None = None, procs: str = "") -> Path:
    g = root / rel
    g.mkdir(parents=True, exist_ok=True)
    (g / "cgroup.procs").write_text(procs)
    if limit is not None:
        (g / "memory.max").write_text(limit + "\n")
    return g


def test_the_tightest_limit_above_a_leaf_applies(tmp_path: Path) -> None:
    _group(tmp_path, "ci", "8589934592")
    _group(tmp_path, "ci/bench", "6442450944")
    _group(tmp_path, "ci/bench/main", "max", procs="42\n")
    assert tightest_limit(tmp_path, "/ci/bench/main", "memory.max") == 6442450944
    # a tighter one further down wins; no limit anywhere: 0
    _group(tmp_path, "ci/bench/main", "1073741824", procs="42\n")
    assert tightest_limit(tmp_path, "/ci/bench/main", "memory.max") == 1073741824
    _group(tmp_path, "free/leaf", "max")
    assert tightest_limit(tmp_path, "/free/leaf", "memory.max") == 0
    assert tightest_limit(tmp_path, "/", "memory.max") == 0


def test_a_build_group_goes_next_to_an_occupied_leaf_not_to_the_root(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cgroup, "V2", tmp_path)
    (tmp_path / "cgroup.procs").write_text("1\n")
    leaf = _group(tmp_path, "bench/main", "max", procs="42\n")
    assert cgroup.v2_base(leaf) == tmp_path / "bench"  # below the capped parent
    empty = _group(tmp_path, "scope", "max")
    assert cgroup.v2_base(empty) == empty  # an empty group can hold the build's group
    assert cgroup.v2_base(tmp_path) == tmp_path
    assert cgroup.v2_base(None) == tmp_path


def test_leaving_the_build_group_goes_back_where_the_helper_came_from(tmp_path: Path) -> None:
    """Next to an occupied leaf the group's parent takes no process (v2): the helper returns
    to the leaf it came from, so that its group can be removed."""
    came_from = _group(tmp_path, "bench/main", procs="42\n")
    group = _group(tmp_path, "bench/builder-x")
    (tmp_path / "bench" / "cgroup.procs").mkdir()  # writing fails, as EBUSY would
    cgroup.remove(group, back=came_from)
    assert (came_from / "cgroup.procs").read_text() == str(os.getpid())
    # without a place to come back to, the parent (v1, or a v2 group we sat in ourselves)
    other = _group(tmp_path, "scope/builder-y")
    cgroup.remove(other)
    assert (tmp_path / "scope" / "cgroup.procs").read_text() == str(os.getpid())
