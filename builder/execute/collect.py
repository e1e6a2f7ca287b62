"""What builder does itself for builds driven by other tools: make the compiler wrappers
(:class:`PrepareBuild`) and fill a stage (:class:`CollectInstall`) from a wheel and the
recipe's ``install.files``.

A wrapper (:mod:`builder.memory.wrappers`) is a small Python script named like the
compiler it stands for (``cc``, ``c++``, ``nvcc``); it runs ``builder.memory.launcher``
with the real compiler, which asks the build's broker for memory first.  Build tools that
take their compiler from ``CC``, ``CXX`` or ``PYTORCH_NVCC`` (setuptools,
``torch.utils.cpp_extension``, xmake) therefore compile under the same admission, history
and OOM retry as CMake recipes.
"""

from __future__ import annotations

import glob
import os
import zipfile
from pathlib import Path

from builder.memory.wrappers import script
from builder.plan.payloads import CollectInstall, PrepareBuild
from builder.util import writer
from builder.util.files import atomic_write, replace_dir

__all__ = ["CollectError", "collect", "prepare"]


class CollectError(Exception):
    """What the stage could not be filled with, said plainly."""


def prepare(p: PrepareBuild) -> None:
    for folder in p.clean:
        writer.remove(folder)
        writer.make_dirs(folder)
    for path, text in p.files:
        atomic_write(Path(path), text)
    for path, real in p.wrappers:
        writer.write_text(path, script(p.python, [*p.chain, real]), mode=0o777)


def _inside(root: Path, rel: str) -> Path:
    target = (root / rel).resolve()
    if not target.is_relative_to(root.resolve()):
        raise CollectError(f"'{rel}' is not a folder below the install prefix")
    return target


def _contained(src: Path, roots: tuple[Path, ...], written: str) -> Path:
    """``src`` once its links are followed lies below one of ``roots`` (the source tree,
    the state folder with the build and stage trees): install.files never copies a file
    from elsewhere (``../../..``, ``/etc/hostname``, a link pointing out)."""
    real = src.resolve()
    if not any(real == r or real.is_relative_to(r) for r in roots):
        raise CollectError(f"install.files: '{written}' ({real}) lies outside the recipe's "
                           f"source and build trees; builder copies only from those")
    return src


def _copy(src: Path, dest_dir: Path) -> None:
    writer.make_dirs(dest_dir)
    if src.is_dir() and not src.is_symlink():
        writer.copy_tree(src, dest_dir / src.name, dirs_exist_ok=True)
    elif src.is_symlink():  # a library's version links stay links
        writer.copy_link(src, dest_dir / src.name)
    else:
        writer.copy_file(src, dest_dir / src.name)


def _keep_wheel(wheel: Path, keep: Path) -> None:
    """The wheel, atomically, as the one file of ``keep``."""
    tmp = keep.with_name(f".{keep.name}.tmp{os.getpid()}")
    writer.remove(tmp)
    writer.make_dirs(tmp)
    writer.copy_file(wheel, tmp / wheel.name)
    replace_dir(tmp, keep)


def _unpack(wheel: Path, stage: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            name = info.filename
            if name.startswith("/") or ".." in Path(name).parts:
                raise CollectError(f"{wheel.name}: refusing member {name!r} (leaves the stage)")
            mode = info.external_attr >> 16
            if name.endswith("/"):
                writer.make_dirs(stage / name)
                continue
            # zipfile drops the executable bits: keep them
            writer.write_bytes(stage / name, z.read(info), sync=False,
                               mode=(mode & 0o777) | 0o600 if mode & 0o111 else 0o666)


def collect(p: CollectInstall) -> list[str]:
    """Fill the stage; returns what was collected (for the log)."""
    stage = Path(p.stage)
    if p.clean:
        writer.remove(stage)
    writer.make_dirs(stage)
    state = writer.owned_root(stage)
    roots = tuple(Path(r).resolve() for r in (p.source, state) if r)
    done: list[str] = []
    if p.wheel_from:
        wheels = sorted(Path(p.wheel_from).glob("*.whl"))
        if len(wheels) != 1:
            raise CollectError(f"the build left {len(wheels)} wheel(s) in {p.wheel_from}, "
                               f"expected one ({', '.join(w.name for w in wheels) or 'none'})")
        if p.wheel_to:
            _keep_wheel(wheels[0], Path(p.wheel_to))
            done.append(f"wheel {wheels[0].name} → {p.wheel_to}")
        if p.unpack:
            _unpack(wheels[0], stage)
            done.append(f"unpacked {wheels[0].name} into {stage}")
    for src, to in p.files:
        base = src if os.path.isabs(src) else str(Path(p.source) / src)
        dest = _inside(stage, to)
        if glob.has_magic(base):
            matches = sorted(glob.glob(base, recursive=True))
            if not matches:
                raise CollectError(f"install.files: '{src}' matches nothing")
            for m in matches:
                _copy(_contained(Path(m), roots, src), dest)
            done.append(f"{len(matches)} file(s) from {src} → {to or '.'}")
        elif Path(base).is_dir():
            writer.copy_tree(_contained(Path(base), roots, src), dest, dirs_exist_ok=True)
            done.append(f"folder {src} → {to or '.'}")
        elif Path(base).exists():
            _copy(_contained(Path(base), roots, src), dest)
            done.append(f"{src} → {to or '.'}")
        else:
            raise CollectError(f"install.files: '{src}' does not exist (after the build)")
    return done
