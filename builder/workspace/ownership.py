"""What builder may write into, replace or delete: only what it created.

Two kinds of folders are builder's:

* **the state folder** (``.builder/`` or ``--state-dir``), recognised by the marker file
  ``.builder-state`` that builder writes when it creates the folder (or adopts an empty
  one).  A folder holding anything without the marker — even names builder uses, such as
  ``build/ install/ logs/`` and an empty ``lock`` — is not a state folder: builder refuses
  to use it before touching anything, so ``--state-dir ~`` cannot lose ``~/install``.
* **published kernel trees** (``<install.root>/<backend>/``), whose files builder
  replaces on each publish — only those its ``manifest.json`` lists: what a user put into
  the tree is carried into the new one.  A tree is builder's when it holds the marker
  ``.builder-owned`` (written into every tree before it is renamed into place), or — for
  trees published before the marker — when the state folder's registry
  (``kernel-installs.json``) lists it and its ``manifest.json`` is there.  Anything else
  at that path (``/usr/local/cuda``) is refused, naming the path and what to do.

An install root must be an absolute path once substituted; an empty one (an unset
``${env.X}``, ``-o root=``) is an error, never the current folder.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

from builder.errors import FileSystemError, OwnershipError, PlanError
from builder.util import writer
from builder.util.writer import STATE_MARKER, TREE_MARKER

__all__ = [
    "STATE_MARKER",
    "STATE_NAMES",
    "TREE_MARKER",
    "carry_unlisted",
    "check_tree",
    "claim_state",
    "install_root",
    "is_state_folder",
    "mark_tree",
    "preflight",
    "registered_trees",
    "registry_text",
    "require_state",
    "shared_tree",
    "tree_owned",
]

#: every name builder writes at the top of a state folder
STATE_NAMES = frozenset({
    "conan", "build", "stage", "install", "kernels", "logs", "host.json", "lock", "sources",
    "wheels", "reports", "memory-history.json", "step-times.json", "last-build.json",
    "kernel-installs.json", "ccache", "sccache", "report.html", "publish", "digests.json",
    "lockfiles.json", "in-use.json", "dist", STATE_MARKER})
#: what a process killed while it made the marker leaves (the writer's temporary file)
_MARKER_TEMP = re.compile(r"^\.\.builder-state\.tmp\d+$")


def is_state_folder(path: Path) -> bool:
    try:
        return (path / STATE_MARKER).is_file()
    except OSError:
        return False


def claim_state(state: Path) -> None:
    """Make sure ``state`` is builder's state folder before anything is written or
    deleted in it: create it with its marker, adopt an empty folder (or one holding only
    what an interrupted claim left), refuse anything else — a folder without the marker
    is not builder's, whatever names it holds."""
    try:
        st = os.stat(state)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise FileSystemError.of(exc, "cannot use it as the state folder") from None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise OwnershipError(str(state), "it is not a folder, so it cannot be builder's "
                             "state folder", "name a folder with --state-dir (or "
                             "$BUILDER_STATE_DIR), e.g. a new one")
    if st is not None and is_state_folder(state):
        return
    try:
        if st is not None:
            foreign = sorted(n for n in os.listdir(state) if not _MARKER_TEMP.match(n))
            if foreign:
                shown = ", ".join(foreign[:3]) + (" …" if len(foreign) > 3 else "")
                raise OwnershipError(
                    str(state), f"it is not a builder state folder (it holds {shown} but "
                    f"no {STATE_MARKER} marker, so builder did not make it); builder never "
                    f"writes into or deletes from a folder it did not make",
                    "pass --state-dir with a new or empty folder (or the state folder of "
                    "an earlier build)")
        writer.make_dirs(state, named=True)
        writer.write_marker(state, STATE_MARKER)
    except OSError as exc:
        raise FileSystemError.of(exc, "cannot create the state folder") from None


def require_state(state: Path) -> None:
    """For what deletes: ``state`` must already be builder's state folder."""
    if not is_state_folder(state):
        claim_state(state)


def mark_tree(folder: Path) -> None:
    """Mark a folder builder is about to rename into place as builder's."""
    writer.write_marker(folder, TREE_MARKER)


def carry_unlisted(tree: Path, new: Path) -> None:
    """Move what a user put into the published ``tree`` (every entry its manifest does
    not list) into ``new``, the tree about to replace it: a republish replaces builder's
    files only.  A user's file where the new tree puts one of builder's is refused,
    before anything is replaced."""
    from builder.util.records import read_manifest

    if not tree.is_dir() or tree.is_symlink():
        return
    if not (tree / TREE_MARKER).is_file():  # builder's by its registry (check_tree)
        writer.write_marker(tree, TREE_MARKER)
    manifest = read_manifest(tree / "manifest.json") or {}
    listed = {str(f.get("path")) for f in manifest.get("files", ()) if isinstance(f, dict)}
    listed |= {"manifest.json", TREE_MARKER}
    theirs = [p for p in sorted(tree.rglob("*")) if (not p.is_dir() or p.is_symlink())
              and p.relative_to(tree).as_posix() not in listed]
    clash = [p for p in theirs if os.path.lexists(new / p.relative_to(tree))]
    if clash:
        writer.remove(new)
        raise OwnershipError(str(clash[0]), "the new kernel tree puts one of builder's "
                             "files there, and this one is not builder's (its manifest "
                             "does not list it)", "move the file away and build again")
    for p in theirs:
        dest = new / p.relative_to(tree)
        writer.make_dirs(dest.parent)
        writer.move(p, dest)


def registered_trees(state: Path) -> dict[str, str]:
    """The kernel trees this state folder published (tree → variant key)."""
    from builder.util.records import read_kernel_installs

    return read_kernel_installs(state / "kernel-installs.json")


def tree_owned(tree: Path, registry: dict[str, str]) -> bool:
    try:
        if (tree / TREE_MARKER).is_file():
            return True
        if str(tree) in registry and (tree / "manifest.json").is_file():
            return True
        return _published_before_markers(tree)
    except OSError:
        return False


def _published_before_markers(tree: Path) -> bool:
    """A kernel tree builder published before it marked its trees (another state folder's,
    or an older builder's): its ``manifest.json`` is builder's kernel manifest and the folder
    holds exactly the files it lists, each with its recorded size and sha256 — replacing it
    destroys nothing builder did not make.  Anything else in it, and it is not builder's."""
    from builder.util.files import file_sha256
    from builder.util.records import read_manifest

    manifest = read_manifest(tree / "manifest.json")
    if not manifest or "artifacts" not in manifest or "key" not in manifest:
        return False
    listed = {str(f.get("path")): f for f in manifest.get("files", ())
              if isinstance(f, dict)}
    found = {p.relative_to(tree).as_posix() for p in tree.rglob("*")
             if not p.is_dir() or p.is_symlink()} - {"manifest.json"}
    if found != set(listed):
        return False
    for rel, f in listed.items():
        p = tree / rel
        if p.is_symlink() or not p.is_file() or p.stat().st_size != f.get("size") or \
                file_sha256(p) != f.get("sha256"):
            return False
    return True


def check_tree(tree: Path, registry: dict[str, str]) -> None:
    """Refuse to replace ``tree`` unless it is absent or builder's."""
    try:
        exists = tree.is_symlink() or tree.exists()
    except OSError as exc:
        raise FileSystemError.of(exc, "cannot inspect the install tree") from None
    if not exists:
        return
    if tree.is_symlink() or not tree.is_dir():
        raise OwnershipError(str(tree), "builder would replace it with the published kernel "
                             "tree, and it is not a folder builder created",
                             "move it away, or choose another install root "
                             "(install.root, or the option that sets it: -o NAME=/abs/path)")
    if not tree_owned(tree, registry):
        raise OwnershipError(str(tree), "builder would replace this folder with the "
                             f"published kernel tree, and it did not create it (no "
                             f"{TREE_MARKER} marker, not in its registry)",
                             "move the folder away, or choose another install root "
                             "(install.root, or the option that sets it: -o NAME=/abs/path)")


def install_root(text: str, display: str, written: str, unset: list[str]) -> Path:
    """An install root after substitution: absolute, never empty.  ``unset`` names the
    environment variables the root uses that have no value."""
    if unset:
        raise PlanError(f"{display}: install.root {written!r} uses ${{env.{unset[0]}}}, which "
                        f"is not set\n  fix: set {unset[0]} to an absolute path, or give "
                        f"install.root an absolute path")
    if not text.strip():
        raise PlanError(f"{display}: install.root {written!r} is empty once substituted\n"
                        f"  fix: give it an absolute path (e.g. -o NAME=/abs/path for the "
                        f"option that sets it)")
    if "\0" in text or "\n" in text:
        raise PlanError(f"{display}: install.root {text!r} contains a control character\n"
                        f"  fix: give it a plain absolute path")
    if not text.startswith("/"):
        raise PlanError(f"{display}: install.root {text!r} is not an absolute path (it "
                        f"would publish relative to the current folder)\n  fix: give an "
                        f"absolute path, or one starting with ~")
    p = Path(os.path.normpath(text))
    if p == Path("/"):
        raise PlanError(f"{display}: install.root is the file system's root\n  fix: give a "
                        f"folder of its own, e.g. ~/.kernels")
    return p


def preflight(plan_steps: list[tuple[str, str]], state: Path) -> None:
    """Before a build runs: every kernel tree it will publish is absent or builder's.
    ``plan_steps``: (kind, tree) of the publish steps that will run."""
    registry = registered_trees(state)
    for _, tree in plan_steps:
        check_tree(Path(tree), registry)


def shared_tree(claims: list[tuple[str, str, str]]) -> None:
    """Refuse a plan where two recipes publish into one kernel tree.  ``claims``: (tree,
    recipe, where its install.root is written) per publish step."""
    first: dict[str, tuple[str, str]] = {}
    for tree, recipe, where in claims:
        other = first.setdefault(tree, (recipe, where))
        if other[0] != recipe:
            raise PlanError(f"{where}: install.root: recipe {recipe} publishes into {tree}, "
                            f"and so does recipe {other[0]} ({other[1]}); each would "
                            f"replace the other's kernels\n  fix: give each recipe its "
                            f"own install root (install.root, or -o NAME=/abs/path)")


def registry_text(registry: dict[str, str]) -> str:
    return json.dumps(registry, indent=2, sort_keys=True)
