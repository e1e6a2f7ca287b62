"""Plan-wide orderings and notes of the resolver: variants with their dependencies
first, and the commit each ``allow_branch`` git source is pinned to."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from builder.plan.model import Step, Variant
from builder.plan.payloads import FetchSource
from builder.workspace.state import State

__all__ = ["branch_notes", "ordered"]


def branch_notes(recipe: str, steps: Sequence[Step], state: State) -> list[str]:
    """Each ``allow_branch`` git source's fetch: the commit it is pinned to and when that
    was resolved (from the fetched tree's record), or that it is resolved when fetched."""
    from builder.recipe.semantic import is_full_rev
    from builder.source.fetch import branch_note

    pinned = {name: (commit, when) for name, commit, when in state.fetched_commits}
    return [branch_note(recipe, s.payload.location, s.payload.rev,
                        pinned.get(Path(s.payload.dest).name))
            for s in steps if isinstance(s.payload, FetchSource) and
            s.payload.kind == "git" and not is_full_rev(s.payload.rev)]


def ordered(variants: list[Variant]) -> list[Variant]:
    """Dependencies first; ties keep the order of discovery (deterministic)."""
    by_id = {v.id: v for v in variants}
    out: list[Variant] = []
    seen: set[str] = set()

    def visit(v: Variant) -> None:
        if v.id in seen:
            return
        seen.add(v.id)
        for d in v.deps:
            visit(by_id[d])
        out.append(v)

    for v in variants:
        visit(v)
    return out
