"""What a finished build says about its results: where each variant's install, kernel
tree and wheels are, and each wheel's platform tag with its story."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builder.plan.model import SKIP, BuildPlan
from builder.plan.payloads import WheelBuild
from builder.recipe.recipeset import display_path

__all__ = ["print_outputs", "print_wheels"]


def print_wheels(plan: BuildPlan) -> None:
    """Each wheel the build has, with its tag's story: the manylinux policy auditwheel
    found, or why the wheel kept its linux tag (never silently)."""
    from builder.wheels.repair import find

    for s in plan.steps:
        w = s.payload
        if not isinstance(w, WheelBuild) or s.status == SKIP:
            continue
        whl = find(w)
        if whl is None:
            continue
        stem = whl.name[:-4]
        if w.variant_label:  # the label follows the platform tag
            stem = stem[:-len(w.variant_label) - 1]
        tag = stem.rsplit("-", 1)[-1].split(".")[0]
        how = w.note if not w.policy else \
            f"{tag}: the oldest manylinux policy its binaries satisfy (auditwheel)" \
            if w.policy == "auto" else f"{tag} (wheel.manylinux), checked by auditwheel"
        print(f"wheel: {display_path(whl)} — {how}")
        if not w.policy and w.fix:
            print(f"  fix: {w.fix}")


def print_outputs(plan: BuildPlan, summary: Any) -> None:
    """Where each variant's results are: install tree, published kernels, wheels."""
    failed = {f.step_id.rsplit("/", 1)[0] for f in summary.failed} | {
        a.rsplit("/", 1)[0] for a in summary.aborted}
    lines = []
    for v in plan.variants:
        if v.status == SKIP or v.id in failed:
            continue
        steps = [s for s in plan.steps if s.variant == v.id and s.status != SKIP]
        kernels = [o for s in steps if s.kind == "publish-kernels" for o in s.outputs]
        wheels = [o for s in steps if s.kind == "wheel" for o in s.outputs]
        where = [display_path(Path(p)) for p in kernels or [v.prefix]]
        where += [display_path(Path(w)) for w in wheels]
        lines.append(f"  {v.id}: {', '.join(where)}")
    if lines:
        print("outputs:")
        print("\n".join(lines))
