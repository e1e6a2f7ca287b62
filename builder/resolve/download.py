"""A variant published on a Conan remote is planned as a download: its build steps are
replaced by one ``conan download`` step (the remote's keys are looked up before planning
and handed in through the workspace :class:`~builder.workspace.state.State`)."""

from __future__ import annotations

from dataclasses import replace

from builder.plan.model import DOWNLOAD, Step, Variant
from builder.plan.payloads import Download, KernelEntry, PublishInstall, PublishKernels
from builder.workspace.paths import Workspace

__all__ = ["artifacts_ref", "download_steps", "key_query"]


def artifacts_ref(name: str, version: str) -> str:
    return f"{name}-artifacts/{version}"


def key_query(key: str) -> str:
    return f"options.builder_key={key}"


def download_steps(v: Variant, steps: list[Step], remote: str, conan: str, ws: Workspace,
                   cmake: bool) -> list[Step]:
    """Replace a variant's build steps by one download step: the publish steps stay (they
    put the downloaded install tree or kernel tree in place, as after a build); tests are
    left out (they ran where the variant was built and published)."""
    sid = v.id
    wheels = [s.outputs[0] for s in steps if s.kind == "wheel" and s.outputs]
    entries = [s.payload.entry for s in steps if isinstance(s.payload, KernelEntry)]
    refs = ([f"{v.recipe}/{v.version}"] if cmake else []) + [artifacts_ref(v.recipe,
                                                                           v.version)]
    env = (("CONAN_HOME", str(ws.conan_home)),)
    stage = next((s.payload.stage for s in steps if isinstance(s.payload, PublishInstall)), "")
    download = Step(
        id=f"{sid}/download", kind="download", variant=sid,
        commands=tuple((conan, "download", f"{ref}#*:*", "-p", key_query(v.compile_key), "-r",
                        remote)
                       for ref in refs),
        env=env, cwd=str(ws.state), outputs=tuple(wheels), status=DOWNLOAD,
        reason=v.reason, inputs_hash=v.compile_key, timeout=1800,
        payload=Download(remote=remote, conan=conan, key=v.compile_key, refs=tuple(refs),
                         stage=stage,
                         wheels=tuple(wheels), kernel_entries=tuple(entries)))
    kept = [replace(s, status=DOWNLOAD, reason=v.reason, deps=(download.id,),
                    payload=replace(s.payload, variant_key=v.key)
                    if isinstance(s.payload, PublishKernels) else s.payload)
            for s in steps if s.kind in ("publish", "publish-kernels")]
    return [download, *kept]


