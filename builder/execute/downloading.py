"""A variant downloaded from a Conan remote, checked, and put where a build would."""

from __future__ import annotations

import json
from pathlib import Path

from builder.errors import DownloadFailed, StepFailed
from builder.execute.host import StepHost
from builder.plan.model import Step
from builder.plan.payloads import Download
from builder.util.waiting import ticker

__all__ = ["download"]


def download(ex: StepHost, step: Step) -> None:
    """Fetch a variant's packages from the remote, check them against the hashes
    written when they were published, and put their files where a build would."""
    from builder.remote import conan as rm

    dl = step.payload
    assert isinstance(dl, Download)
    name, key, conan = dl.remote, dl.key, dl.conan
    log = ex.log_path(step)
    try:
        with ticker(lambda t: ex.progress(step, f"conan download from {name}: still waiting "
                                                f"({t:.0f} s of {step.timeout} s)")):
            ex.commands(step)
    except StepFailed as failed:
        why, fix = rm.explain(name, "\n".join(failed.tail))
        raise DownloadFailed(step.id, failed.log_path, f"remote '{name}' {why}; {fix}",
                             key, tail=failed.tail) from None

    run = rm.checked(ex.runner, step.id, ex.ws.state, dict(step.env),
                     log.with_suffix(".check.log"), 600)

    refs = dl.refs
    out_file = ex.ws.temp_file("download", ".json")
    found = {ref: rm.locate(run, conan, ref, key, out_file) for ref in refs}
    art = found[refs[-1]]
    main = found[refs[0]] if len(refs) > 1 else None
    problems = [f"{ref}: not in the local cache after the download"
                for ref, loc in found.items() if loc is None]
    if not problems:
        for loc in found.values():
            assert loc is not None
            try:
                run([conan, "cache", "check-integrity", loc.ref])
            except StepFailed:
                problems.append(f"{loc.ref}: Conan's manifest check failed")
    if not problems and art is not None:
        try:
            manifest = json.loads((art.folder / rm.MANIFEST).read_text(encoding="utf-8"))
            problems = rm.verify(manifest, art.folder, main.folder if main else None)
        except (OSError, ValueError) as exc:
            problems = [f"{rm.MANIFEST}: unreadable ({exc})"]
    if problems:
        for loc in found.values():
            if loc is not None:  # never used, never left for the next build
                run([conan, "remove", loc.ref, "-c"])
        raise DownloadFailed(step.id, str(log), f"the packages from remote '{name}' are "
                             f"corrupted ({'; '.join(problems[:3])}); removed from the "
                             f"local cache", key, corrupt=True)
    assert art is not None
    try:
        if main is not None:
            rm.copy_tree(main.folder, Path(dl.stage))
        for wheel in dl.wheels:  # a variant's wheel folder
            rm.copy_tree(art.folder / "wheels" / Path(wheel).name, Path(wheel))
        for entry in dl.kernel_entries:
            rm.copy_tree(art.folder / "kernels" / Path(entry).name, Path(entry))
    except OSError as exc:  # the remote's package lacks what this plan needs
        raise DownloadFailed(step.id, str(log), f"the packages from remote '{name}' "
                             f"lack a file this variant needs ({exc})", key,
                             corrupt=True) from None
