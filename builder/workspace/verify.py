"""``builder verify``: every installed file against the sha256 its manifest recorded.

A build counts an install as complete when every listed file has its size and sha256
(through the digest cache, so unchanged files are not re-read) and every listed symbolic
link (``libx.so -> libx.so.1``) still points where it pointed when published
(:func:`link_problems`, shared with the build's check); ``verify`` re-reads everything —
install trees under the state folder and every kernel tree builder's registry says it
published, a missing one included — and names each file or link that is missing,
changed, of another kind, or not in the manifest.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from builder.util import records
from builder.util.files import file_sha256
from builder.workspace.ownership import TREE_MARKER
from builder.workspace.paths import Workspace

__all__ = ["check_tree", "format_text", "link_problems", "verify"]

_NOT_LISTED = {"manifest.json", TREE_MARKER}


def link_problems(folder: Path, manifest: dict[str, Any]) -> list[str]:
    """Each recorded link that is missing, no longer a link, or points elsewhere."""
    problems: list[str] = []
    for link in manifest.get("links", ()):
        rel, target = link["path"], link["target"]
        p = folder / rel
        try:
            now = os.readlink(p)
        except FileNotFoundError:
            problems.append(f"{rel}: missing (a link to {target})")
            continue
        except OSError:
            problems.append(f"{rel}: not a symbolic link (recorded as a link to {target})")
            continue
        if now != target:
            problems.append(f"{rel}: points to {now}, recorded {target}")
    return problems


def check_tree(folder: Path) -> list[str]:
    """The problems of one install or kernel tree ([] when it matches its manifest)."""
    manifest = records.read_manifest(folder / "manifest.json")
    if manifest is None:
        return ["manifest.json is missing or damaged"]
    problems: list[str] = []
    listed: set[str] = set()
    for f in manifest["files"]:
        rel = f["path"]
        listed.add(rel)
        p = folder / rel
        try:
            st = os.lstat(p)
        except OSError:
            problems.append(f"{rel}: missing")
            continue
        if not stat.S_ISREG(st.st_mode):
            problems.append(f"{rel}: not a regular file")
        elif st.st_size != f["size"]:
            problems.append(f"{rel}: size {st.st_size}, recorded {f['size']}")
        else:
            try:
                if file_sha256(p) != f["sha256"]:
                    problems.append(f"{rel}: content differs from the recorded sha256")
            except OSError as exc:
                problems.append(f"{rel}: unreadable ({exc.strerror})")
    problems += link_problems(folder, manifest)
    listed.update(link["path"] for link in manifest.get("links", ()))
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        if rel not in listed and rel not in _NOT_LISTED and (p.is_symlink() or
                                                             not p.is_dir()):
            problems.append(f"{rel}: not in the manifest")
    return problems


def verify(ws: Workspace) -> dict[str, Any]:
    trees: list[Path] = []
    install = ws.installs
    if install.is_dir():
        trees += sorted(mf.parent for mf in install.glob("*/*/manifest.json"))
    results = {str(t): check_tree(t) for t in trees}
    # every kernel tree the registry says builder published: a deleted one is a problem,
    # not a tree fewer to check
    for t in sorted(records.read_kernel_installs(ws.kernel_installs)):
        results[t] = check_tree(Path(t)) if Path(t).is_dir() else [
            "missing: builder published a kernel tree here and its registry still lists it"]
    return {"checked": len(results), "bad": sum(1 for v in results.values() if v),
            "trees": results}


def format_text(result: dict[str, Any]) -> str:
    lines = []
    for tree, problems in result["trees"].items():
        lines.append(f"{'ok' if not problems else 'BAD'}  {tree}")
        lines.extend(f"     {p}" for p in problems)
    lines.append(f"{result['checked']} tree(s) checked, {result['bad']} with problems" +
                 ("; rebuild them with `builder build` (a changed file no longer counts as "
                  "installed)" if result["bad"] else ""))
    return "\n".join(lines) + "\n"
