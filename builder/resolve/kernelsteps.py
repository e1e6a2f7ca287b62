"""The steps of a kernel recipe (``build: {system: kernels}``), pure like the resolver.

One compile step per (kernel, arch, format), each cached under its own key: the command
as it runs (compiler, flags, arch, source) and the toolchain by content, plus — while an
earlier compile's record of what it read (its depfile: the source and every header) still
holds — that compile's key, else the kernel's file and its whole source tree.  So a
README edit compiles nothing, and a header edit compiles the kernels that include it.
Then one publish step that lays out
``<root>/<backend>/<kernel>/<arch>.<ext>`` with a manifest, then the recipe's tests and
its wheel.  ``<root>`` is ``install.root`` (default ``~/.builder-kernels``) and the rest
is ``install.layout``, which must stay below ``<root>/<backend>/`` once substituted.
The steps shared with CMake recipes (fetch, tests, wheels) come from :mod:`builder.resolve.steps`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from builder import backends as registry
from builder.backends import Backend
from builder.plan.model import BUILD, CACHED, SKIP, Step
from builder.plan.payloads import KernelEntry, PublishKernels
from builder.recipe.model import Kernel, Recipe, digest
from builder.recipe.subst import substitute
from builder.resolve.steps import (
    VariantContext,
    fetch_steps,
    test_steps,
    variant_status,
)
from builder.resolve.wheelsteps import wheel_steps

__all__ = ["kernel_steps", "kernels_root", "with_variant_key"]


def with_variant_key(publish: Step, key: str) -> Step:
    """The kernel tree's publish step recording ``key``, the variant key whose tests need
    not run (none to run, or they ran where a downloaded tree was built)."""
    assert isinstance(publish.payload, PublishKernels)
    return replace(publish, payload=replace(publish.payload, variant_key=key))

def kernels_root(ctx: VariantContext) -> Path:
    """``install.root`` substituted: an absolute path (ownership.install_root)."""
    from builder.recipe.subst import variables
    from builder.workspace.ownership import install_root

    written = ctx.recipe.install.root or "${env.HOME}/.builder-kernels"
    unset = [n[4:] for n in variables(written) if n.startswith("env.") and
             not ctx.env.get(n[4:])]
    root = substitute(written, ctx.values())
    if root.startswith("~") and root[1:2] in ("", "/"):
        if not ctx.env.get("HOME"):
            unset.append("HOME")
        root = ctx.env.get("HOME", "") + root[1:]
    return install_root(root, ctx.recipe.display, written, unset)


def _check_layout(recipe: Recipe, layout: str, backend: str) -> None:
    """The layout after substitution (options and environment variables included) must
    stay below ``<root>/<backend>/``: no absolute path, no ``..``."""
    from builder.errors import PlanError
    from builder.recipe.semantic import layout_problem

    problem = layout_problem(layout)
    if not problem and layout.split("/", 1)[0] != backend:
        problem = f"'{layout}' does not start with the backend's folder '{backend}/'"
    if problem:
        raise PlanError(f"{recipe.display}: install.layout {recipe.install.layout!r}: "
                        f"{problem}\n  fix: keep option and environment values used in "
                        f"the layout free of '/' and '..'")


def kernel_steps(ctx: VariantContext) -> list[Step]:
    """One compile step per (kernel, arch, format), then the publish step, tests, wheel."""
    r, v = ctx.recipe, ctx.variant
    tree = kernels_root(ctx) / v.backend
    steps: list[Step] = []
    artifacts: list[dict[str, str]] = []
    for k in r.kernels:
        _kernel(ctx, k, steps, artifacts)
    fetch = fetch_steps(ctx)
    if fetch:
        steps = [replace(st, deps=(*st.deps, fetch[0].id)) for st in steps]
    status, reason, fix = variant_status(v)
    if status == BUILD and ctx.kernel_installs.get(str(tree)) == v.compile_key and \
            all(s.status != BUILD for s in steps):
        status = CACHED
    publish = Step(id=f"{v.id}/publish", kind="publish-kernels", variant=v.id,
                   deps=tuple(s.id for s in steps if s.status != SKIP), outputs=(str(tree),),
                   status=status, reason=reason, fix=fix, inputs_hash=v.compile_key,
                   payload=PublishKernels(tree=str(tree), root=str(tree.parent),
                                          artifacts=tuple(artifacts)))
    # a test that passed with this variant key against this very tree is up to date
    tests, _ = test_steps(ctx, publish.id, str(tree), compiled=publish.status == CACHED)
    if not any(t.status == BUILD for t in tests):  # none to run: the tree is complete with
        publish = with_variant_key(publish, v.key)  # this variant key once published
    wheel = wheel_steps(ctx, str(Path(ctx.source_root()) / r.python.package), publish.id,
                        native=False)
    return [*fetch, *steps, publish, *tests, *wheel]


@dataclass(frozen=True)
class _Found:
    """How a kernel's artifacts are keyed: by the command as it runs and the toolchain by
    content (the artifact's *config*), then either by what an earlier compile with that
    config recorded reading — while all of it is unchanged (state.kernel_records) — or
    conservatively by the kernel's file and its whole source tree."""

    toolchain: tuple[tuple[str, str], ...]  # the compiler and its host compiler, by content
    record: bool  # a depfile is asked for, and a record kept
    owned: tuple[str, ...]  # builder's folders: never inputs
    names: tuple[tuple[str, str], ...]  # (source folder, digest of its file names)
    tree: tuple[str, str]  # the kernel file's digest and the source tree's

    @classmethod
    def of(cls, ctx: VariantContext, src: str) -> _Found:
        r, be = ctx.recipe, registry.get(ctx.kind)
        # what the compile read is recorded for the user's own folders, read in place; a
        # fetched or patched tree is builder's copy, named by its content
        record = bool(r.sources) and all(s.kind == "path" and not s.patches and
                                         not s.exclude for s in r.sources)
        return cls(
            tuple((n, t.identity or t.version) for n in dict.fromkeys((be.tool, "cxx"))
                  if n and (t := ctx.host.tool(n)) is not None),
            record, (str(ctx.ws.state),),
            tuple((loc, ctx.name_digests.get(loc, "")) for loc in
                  dict.fromkeys(s.location for s in r.sources)) if record else (),
            (ctx.file_digests.get(src, ""), dict(ctx.variant.pins).get("source", "")))

    def key(self, ctx: VariantContext, be: Backend, kernel: str, src: str, arch: str,
            fmt: str, flags: tuple[str, ...]) -> tuple[str, str, bool]:
        """(the artifact's key, its config, whether its compile writes a depfile); two
        kernels compiled alike from one file are two artifacts (two steps never share a
        cache entry)."""
        # the source named from the project's folder: a key does not depend on where the
        # project lies (a record does: it names the files it checked)
        probe = be.kernel_command(os.path.relpath(src, ctx.ws.root), arch, "OUT", flags,
                                  ctx.host, fmt, depfile="DEPFILE" if self.record else "")
        config = digest("kernel-3", ctx.variant.backend, kernel, arch, fmt, probe.commands,
                        probe.env, self.toolchain)
        found = ctx.kernel_records.get(config, "") if probe.depfile else ""
        if found[:20] in ctx.kernel_artifacts:
            return found, config, True
        return digest("kernel-3", config, *self.tree), config, bool(probe.depfile)


def _kernel(ctx: VariantContext, k: Kernel, steps: list[Step],
            artifacts: list[dict[str, str]]) -> None:
    """The compile steps of one kernel (each cached under its key: :class:`_Found`) and
    the artifacts they publish."""
    r, v, host = ctx.recipe, ctx.variant, ctx.host
    be = registry.get(ctx.kind)
    spec = r.backend(v.backend)
    src_rel = k.source_for(v.backend)
    if spec is None or src_rel is None:
        return
    vals = ctx.values()
    common = ctx.flags().get(be.flags_lang or "cxx")
    flags = tuple(substitute(f, vals) for f in (*common, *dict(k.flags).get(v.backend, ())))
    src = str(Path(ctx.source_root()) / src_rel)
    formats = spec.formats or be.kernel_formats()[:1]
    skipped = {a: (rs, fx) for a, rs, fx in ctx.skipped_archs}
    floor = dict(k.min_arch).get(v.backend)
    found = _Found.of(ctx, src)
    for arch in sorted({*v.archs, *skipped}, key=be.arch_order):
        if floor and be.arch_order(arch) < be.arch_order(floor):
            continue
        for fmt in formats:
            key, config, depfile = found.key(ctx, be, k.name, src, arch, fmt, flags)
            entry = ctx.ws.kernel_cache / key[:20]
            partial = Path(str(entry) + ".partial")
            kc = be.kernel_command(src, arch, str(partial / f"{arch}.{fmt}"), flags, host, fmt,
                                   depfile=str(partial / "deps.d") if depfile else "")
            status, reason, fix = variant_status(v)
            if arch in skipped:
                status, (reason, fix) = SKIP, skipped[arch]
            elif status == BUILD and key[:20] in ctx.kernel_artifacts:
                status = CACHED
            suffix = f":{fmt}" if len(formats) > 1 else ""
            steps.append(Step(
                id=f"{v.id}/kernel:{k.name}:{arch}{suffix}", kind="kernel", variant=v.id,
                commands=kc.commands, env=kc.env, cwd=ctx.source_root(),
                inputs_hash=key, outputs=(str(entry / f"{arch}.{fmt}"),), status=status,
                reason=reason, fix=fix,
                payload=KernelEntry(str(partial), str(entry), config, key, kc.depfile,
                                    found.owned, found.names) if kc.depfile else
                KernelEntry(str(partial), str(entry)),
                timeout=1800))
            if arch not in skipped:
                layout = substitute(r.install.layout, ctx.values(kernel=k.name, arch=arch,
                                                                  ext=fmt))
                _check_layout(r, layout, v.backend)
                artifacts.append({"kernel": k.name, "arch": arch, "format": fmt,
                                  "path": layout, "cache": str(entry / f"{arch}.{fmt}"),
                                  "key": key, **be.artifact_facts(arch, host)})

