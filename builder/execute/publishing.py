"""Publication: an install tree (stage renamed into the prefix, with its manifest) and a
kernel tree (laid out from the kernel cache, marked as builder's, registered)."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from builder.errors import StepFailed
from builder.execute.host import StepHost
from builder.plan.model import Step
from builder.plan.payloads import PublishInstall, PublishKernels, RecordInputs
from builder.util import writer
from builder.util.files import atomic_write, file_list, file_sha256, link_list, replace_dir

__all__ = ["artifact_driver", "publish_install", "publish_kernels"]


def publish_install(ex: StepHost, step: Step) -> None:
    pub = step.payload
    assert isinstance(pub, PublishInstall)
    stage, prefix = Path(pub.stage), Path(pub.prefix)
    manifest = {**pub.meta, "key": step.inputs_hash, "files": file_list(stage),
                "links": link_list(stage),
                "published": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if pub.record is not None:  # what the build read: the next plan checks it
        record = _record(ex, pub.record)
        if record is not None:
            manifest.update(config_key=pub.record.config_key, record=record,
                            **({"own_key": pub.record.own_key} if pub.record.own_key else {}))
    atomic_write(stage / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True))
    replace_dir(stage, prefix)


def publish_kernels(ex: StepHost, step: Step) -> None:
    pub = step.payload
    assert isinstance(pub, PublishKernels)
    tree, root, artifacts = Path(pub.tree), Path(pub.root), pub.artifacts
    from builder.workspace import ownership

    ownership.check_tree(tree, ownership.registered_trees(ex.ws.state))
    # the install root is the recipe's: made like any folder (readable by others under
    # the umask), not as a private temporary folder
    tmp = writer.make_temp_dir(root, f".{tree.name}.tmp{os.getpid()}-", named=True,
                               public=True)
    ownership.mark_tree(tmp)
    records = []
    for a in artifacts:
        rel = Path(a["path"])
        inside = rel.relative_to(rel.parts[0])  # the layout starts with ${backend}/
        if inside.is_absolute() or ".." in inside.parts or not inside.parts:
            raise StepFailed(step.id, [], 1, str(ex.log_path(step)), [],
                             f"refusing to publish {a['path']!r}: it is not a path "
                             f"below the install root")
        dest = tmp / inside
        writer.copy_file(a["cache"], dest, keep_mode=False)
        record = {**{k: v for k, v in a.items() if k != "cache"},
                  "path": inside.as_posix(), "size": dest.stat().st_size,
                  "sha256": file_sha256(dest)}
        if dest.suffix == ".ptx":  # the ISA the file really declares, not the table's
            m = re.search(rb"^\.version\s+(\d+\.\d+)", dest.read_bytes(), re.M)
            if m:
                record["ptx_isa"] = m.group(1).decode()
        problem = artifact_driver(record, dest)
        if problem:
            raise StepFailed(step.id, [], 1, str(ex.log_path(step)), [],
                             f"{a['path']}: {problem}; the plan said the toolkit's "
                             f"CUDA {a.get('min_driver_cuda')} at most — was it built by "
                             f"another nvcc, or with other flags?")
        records.append(record)
    manifest = {"key": step.inputs_hash, "variant": step.variant, "artifacts": records,
                **({"variant_key": pub.variant_key} if pub.variant_key else {}),
                "files": [{"path": r["path"], "size": r["size"], "sha256": r["sha256"]}
                          for r in records],
                "published": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    atomic_write(tmp / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True))
    ownership.carry_unlisted(tree, tmp)
    replace_dir(tmp, tree)
    registry_path = ex.ws.kernel_installs
    registry = ownership.registered_trees(ex.ws.state)
    registry[str(tree)] = step.inputs_hash
    atomic_write(registry_path, json.dumps(registry, indent=2, sort_keys=True))


def artifact_driver(record: dict[str, object], dest: Path) -> str:
    """Set the record's ``min_driver`` (and ``min_driver_cuda``, ``min_driver_why``) to
    what the artifact itself needs (builder.wheels.driver), in place of the plan's most;
    returns why it needs more than the plan said ("" when it does not)."""
    from builder.wheels.driver import MinimumDriver, exceeds, implied
    from builder.wheels.fatbin import artifact_manifest

    found = artifact_manifest(dest.read_bytes(), str(record.get("format", "")))
    try:
        need = implied(found) if found is not None else None
    except ValueError as exc:
        return str(exc)
    if need is None:
        return ""
    planned = str(record.get("min_driver_cuda", ""))
    record.update(min_driver=need.linux, min_driver_cuda=need.cuda,
                  min_driver_why=list(need.why))
    return exceeds(need, MinimumDriver(planned, "")) if planned else ""


def _record(ex: StepHost, spec: RecordInputs) -> dict[str, object] | None:
    """The files the build read (:func:`builder.source.inputs.take_record`); the digest
    cache as the plan left it tells which source files changed while the build ran."""
    from builder.source.digest import StatCache
    from builder.source.inputs import take_record
    from builder.source.launched import Launched, launched_inputs
    from builder.source.reads import compact_logs
    from builder.util import records

    planned = records.read_digest_cache(ex.ws.digest_cache)
    cache = StatCache(planned)
    read = None
    if spec.depfiles:  # a pip or xmake build: what the launcher and the hook kept
        if spec.reads:  # the logs of every build of the folder, as one
            compact_logs(Path(spec.reads))
        read = launched_inputs(Launched(spec.depfiles, spec.reads, spec.stage,
                                        spec.wrappers, spec.mapped, spec.scripts),
                               Path(spec.build), [n for n, _ in spec.names], cache,
                               spec.collected)
        if read is None:
            return None
    return take_record(spec.ninja, Path(spec.build), spec.owned, spec.collected,
                       dict(spec.names), cache, planned, read, spec.mapped)
