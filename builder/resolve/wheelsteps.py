"""The wheel step of a variant (pure, like the resolver): what the wheel will be
(:mod:`builder.wheels.metadata`), the commands that repair it and point it at NVIDIA's
runtime wheels, its variant label and properties, and what its SBOM names as its
origin."""

from __future__ import annotations

from dataclasses import replace
from fnmatch import fnmatch
from pathlib import Path

from builder.plan.model import BUILD, CACHED, Step
from builder.plan.payloads import WheelBuild
from builder.recipe.model import digest
from builder.resolve.keys import recorded
from builder.resolve.steps import VariantContext, passed, tool, variant_status
from builder.wheels.driver import planned as planned_driver
from builder.wheels.metadata import WheelPlan, plan_wheel
from builder.wheels.runtime import exclusions as runtime_exclusions
from builder.wheels.variants import label as variant_label
from builder.wheels.variants import properties as variant_properties

__all__ = ["plan_wheel_of", "provenance", "wheel_steps"]


def wheel_steps(ctx: VariantContext, src: str, after: str, native: bool,
                from_wheel: str = "") -> list[Step]:
    """A wheel of the recipe's Python package, once per variant: per Python version for
    ``abi: cpython``, else one ``py3-none`` (or ``abi3``) wheel that every Python version
    installs; repaired to a manylinux tag where it qualifies (:mod:`builder.wheels`).
    ``from_wheel`` names the folder of the wheel the project's own build made
    (``build.system: python``): it gets the same naming, pins, repair and runtime paths.
    Its commands run only when the written wheel holds binaries."""
    r, v = ctx.recipe, ctx.variant
    if not r.python.versions and not from_wheel:
        return []
    wp = plan_wheel_of(ctx, native)
    mode = ctx.compress_mode() if wp.toolkit else ""
    driver = planned_driver(wp.toolkit, mode) if wp.toolkit else None
    label, props = "", tuple[str, ...]()
    if ctx.wheel_variant and wp.toolkit and driver:
        label = variant_label(wp.toolkit, ctx.wheel_variant)
        props = variant_properties(wp.toolkit, ctx.wheel_variant, driver.cuda)
        wp = replace(wp, variant=label)
    # in the compile key's folder (it goes with the install, and a remote's package
    # holds it); made with this variant key (or before the install was published with it)
    out_dir = ctx.ws.wheel_dir(v.backend, v.compile_key)
    # the packaging key: a wheel made from the install (or the project's own wheel) holds
    # what the compile key covers and the wheel's settings; one that packs a folder of the
    # source tree (a kernel recipe's Python package) holds that folder too
    packed = v.compile_key if from_wheel or (
        bool(v.prefix) and Path(src).is_relative_to(v.prefix)) else v.key
    inputs_hash = digest(packed, "wheel", repr(wp))
    status, reason, fix = variant_status(v)
    made = any(Path(w).parent == out_dir and fnmatch(Path(w).name, wp.glob)
               for w in ctx.wheels)
    if status == BUILD and made and passed(ctx, inputs_hash):
        status = CACHED
    commands, env = _wheel_commands(ctx, wp, out_dir)
    floor = min(r.python.versions, key=lambda x: tuple(int(n) for n in x.split("."))) \
        if r.python.versions else ""
    return [Step(id=f"{v.id}/wheel", kind="wheel", variant=v.id, deps=(after,),
                 commands=commands, env=env, cwd=str(out_dir),
                 outputs=(str(out_dir),), status=status, reason=reason, fix=fix,
                 inputs_hash=inputs_hash, timeout=1800,
                 payload=WheelBuild(
                     src=src, name=wp.dist, version=r.version, tag=wp.tag,
                     summary=r.description, out_dir=str(out_dir), wheel=wp.name,
                     glob=wp.glob, note=wp.note, fix=wp.fix, policy=wp.policy,
                     torch=wp.torch, per_python=wp.per_python, requires=tuple(wp.requires),
                     requires_python=f">={r.python.abi3_floor}" if r.python.abi == "abi3"
                     else f">={floor}" if floor else "", classifiers=tuple(wp.classifiers),
                     keywords=tuple(wp.keywords), from_wheel=from_wheel,
                     toolkit=wp.toolkit, provenance=provenance(ctx),
                     variant_label=label, variant_properties=props,
                     gpu_archs=v.archs if wp.toolkit else (), compress_mode=mode,
                     min_driver=driver.cuda if driver else "",
                     min_driver_linux=driver.linux if driver else "",
                     min_driver_why=driver.why if driver else (),
                     patchelf=tool(ctx.host, "patchelf", "patchelf") if commands else ""))]


def _wheel_commands(ctx: VariantContext, wp: WheelPlan, out_dir: Path
                    ) -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, str], ...]]:
    """The wheel step's commands (auditwheel's repair, the runtime paths into NVIDIA's
    wheels) and their environment."""
    v = ctx.variant
    raw = out_dir / ".raw" / wp.raw_name
    commands: tuple[tuple[str, ...], ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    if wp.policy:
        arch = wp.platform.split("_", 1)[1]
        plat = ("--plat", "auto") if wp.policy == "auto" else \
            ("--plat", f"{wp.policy}_{arch}", "--only-plat")
        commands = ((tool(ctx.host, "auditwheel", "auditwheel"), "repair", *plat,
                     *(a for x in wp.exclude for a in ("--exclude", x)),
                     "-w", str(out_dir / ".repaired"), str(raw)),)
        # the install trees' libraries (the package's own, its dependencies') are found
        # and copied into the wheel; torch's and the drivers' are excluded above
        prefixes = [v.prefix, *(d.prefix for d, _ in ctx.deps)]
        env = (("AUDITWHEEL_LD_LIBRARY_PATH", ":".join(
            str(Path(p) / sub) for p in prefixes for sub in ("lib", "lib64"))),)
    # lean: an RPATH into NVIDIA's wheels, set after the repair (which drops outside ones)
    if runtime_exclusions(wp.toolkit) and ctx.host.tool("patchelf") is not None:
        commands += ((ctx.host.builder_python or "python3", "-m", "builder.wheels.runtime",
                      str(out_dir / (".repaired" if wp.policy else ".raw")),
                      "--toolkit", wp.toolkit,
                      "--patchelf", tool(ctx.host, "patchelf", "patchelf")),)
    return commands, env


def provenance(ctx: VariantContext) -> tuple[tuple[str, str, str, str], ...]:
    """What a wheel's SBOM names as its origin (builder.wheels.sbom): the sources with
    their digests (a local folder's: its content's, or what a recorded build read of it),
    the toolchain by version and path, Conan packages, required recipes."""
    r, v, host = ctx.recipe, ctx.variant, ctx.host
    pins = dict(v.pins)
    rows: list[tuple[str, str, str, str]] = []
    for src in r.sources:
        # a local folder: its content digest — or, for a build keyed by what it read, the
        # digest of that (a README edit nothing reads changes neither the build nor this)
        folder = v.compile_key if recorded(r) else pins.get("source", "")
        digest = folder if src.kind == "path" else src.sha256 or src.rev
        rows.append(("source", src.location, digest, src.kind))
    for key, version in v.pins:
        if key.startswith("toolchain."):
            name = key.split(".", 1)[1]
            found = host.tool(name)
            rows.append(("compiler", name, version, found.path if found else ""))
    rows += [("conan", c.name, c.version, c.provider) for c in r.requires.conan]
    rows += [("recipe", d.recipe, d.version, d.id) for d, _ in ctx.deps]
    return tuple(rows)


def plan_wheel_of(ctx: VariantContext, native: bool) -> WheelPlan:
    """The variant's wheel, decided from the recipe and the host facts."""
    r, v, host = ctx.recipe, ctx.variant, ctx.host
    target = ctx.platform.target if ctx.platform else None
    return plan_wheel(
        name=r.name, version=r.version, abi=r.python.abi,
        python=v.python or (ctx.python.version if ctx.python else ""),
        limited_api=r.python.abi3_floor, os_name=target.os if target else host.os,
        arch=target.machine if target else host.arch, native=native,
        cross=target.name if ctx.cross and target else "", backend_kind=ctx.kind,
        archs=v.archs, tool_versions={t.name: t.version for t in host.tools},
        policy=r.wheel.manylinux, auditwheel=host.tool("auditwheel") is not None,
        patchelf=host.tool("patchelf") is not None, exclude=r.wheel.exclude,
        requires=r.wheel.requires,
        torch=(ctx.python.package("torch") or "") if ctx.python else "")
