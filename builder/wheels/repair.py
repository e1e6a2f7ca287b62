"""Making a planned wheel (:class:`builder.wheels.metadata.WheelPlan`): write it, repair
it with auditwheel, put the result in its folder.

The wheel step's parameters carry the plan; its one command (when the wheel is
repaired) is the ``auditwheel repair`` argv the plan shows.  The executor calls
:func:`write_raw`, runs the command, then :func:`finish`.  A wheel that links libtorch
gets ``Requires-Dist: torch==X.Y.*``: whether it does is read from the ELF files'
``DT_NEEDED`` entries (:func:`needed`), not guessed from the recipe.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path

from packaging.utils import canonicalize_version

from builder.plan.payloads import WheelBuild
from builder.util import writer
from builder.wheels import checks, runtime, variants
from builder.wheels.build import (
    Member,
    dist_name,
    metadata_text,
    read_wheel,
    tree_files,
    write_wheel,
)
from builder.wheels.driver import MinimumDriver, newest
from builder.wheels.elf import is_elf, needed, needed_in
from builder.wheels.metadata import TORCH_SONAMES, torch_pin
from builder.wheels.sbom import SBOM_NAME, sbom_json, shared_objects

__all__ = ["BUILDER_JSON", "RAW", "REPAIRED", "explain", "find", "finish", "links_torch",
           "needed", "promised", "seal", "write_raw"]

RAW = ".raw"  # below the wheel folder: the wheel as written, before repair
#: under ``<dist-info>/``: what builder knows of the wheel's GPU code (:func:`seal`)
BUILDER_JSON = "builder.json"
REPAIRED = ".repaired"  # auditwheel's output folder


def _files(src: Path) -> Iterator[Path]:
    return (p for p in sorted(src.rglob("*")) if p.is_file() and not p.is_symlink())


def links_torch(src: Path) -> list[str]:
    """The files under ``src`` that link libtorch or libc10 (relative paths)."""
    return [p.relative_to(src).as_posix() for p in _files(src)
            if any(TORCH_SONAMES.match(n) for n in needed(p))]


def _with_headers(meta: str, name: str, requires: list[str]) -> str:
    """A METADATA text with its ``Name`` set and ``Requires-Dist`` lines added (after
    the last header; the description body, if any, stays last)."""
    head, sep, body = meta.partition("\n\n")
    lines = [f"Name: {name}" if x.startswith("Name:") else x for x in head.splitlines()]
    have = {x.split(":", 1)[1].strip() for x in lines if x.startswith("Requires-Dist:")}
    lines += [f"Requires-Dist: {r}" for r in requires if r not in have]
    return "\n".join(lines) + "\n" + (sep[1:] + body if sep else "")


def _from_project(w: WheelBuild) -> tuple[list[Member], str, str]:
    """The members of the wheel the project's own build made, renamed to the planned
    distribution (its dist-info and data folders), its METADATA text and its tag."""
    made = sorted(Path(w.from_wheel).glob("*.whl"))
    if len(made) != 1:
        raise ValueError(f"expected the project's one wheel in {w.from_wheel}, found "
                         f"{len(made)}")
    name, version, tag = made[0].name[:-len(".whl")].split("-", 2)
    if tag.count("-") == 3:  # a build tag
        tag = tag.split("-", 1)[1]
    if canonicalize_version(version) != canonicalize_version(w.version):
        raise ValueError(f"the project built {made[0].name}, version {version}, but the "
                         f"recipe's package.version is {w.version}: set package.version to "
                         f"{version}")
    old, new = f"{name}-{version}", f"{dist_name(w.name)}-{w.version}"
    meta = ""
    members: list[Member] = []
    for rel, data, mode in read_wheel(made[0]):
        top, _, rest = rel.partition("/")
        if top == f"{old}.dist-info":
            if rest == "METADATA":
                meta = data.decode("utf-8")
            elif rest not in ("WHEEL", "RECORD"):
                members.append((f"{new}.dist-info/{rest}", data, mode))
        elif top == f"{old}.data":
            members.append((f"{new}.data/{rest}", data, mode))
        else:
            members.append((rel, data, mode))
    if not meta:
        raise ValueError(f"{made[0].name} has no {old}.dist-info/METADATA")
    return members, meta, tag


def write_raw(w: WheelBuild) -> tuple[Path, list[str], bool]:
    """Write the wheel as planned (before repair): from the package folder, or from the
    project's own wheel re-tagged to the planned name.  Its binaries decide what it
    requires (the torch release, NVIDIA's runtime wheels) and whether it is native at
    all: a ``py3-none`` package with no ELF file is written ``py3-none-any``.  Returns
    the wheel, what the log should say, and whether it holds binaries (to repair)."""
    folder = Path(w.out_dir)
    raw_dir = folder / RAW
    writer.remove(raw_dir)
    writer.remove(folder / REPAIRED)
    if w.from_wheel:
        members, meta, built_tag = _from_project(w)
    else:
        src = Path(w.src)
        members = tree_files(src) if src.is_dir() else []
        if not members:
            raise ValueError(f"no files to package under {src}")
        meta = metadata_text(w.name, w.version, w.requires, w.summary, w.classifiers,
                             w.keywords, w.requires_python)
        built_tag = w.tag
    elves = {rel: needed_in(data) for rel, data, _ in members if is_elf(data)}
    said: list[str] = []
    tag = w.tag
    if not elves and w.tag.startswith("py3-none-"):
        tag = "py3-none-any"
        said.append("the package holds no binary: a pure Python wheel (py3-none-any), "
                    "nothing to repair")
    elif elves and built_tag != w.tag:
        raise ValueError(f"the project built a {built_tag} wheel, but the recipe plans "
                         f"{w.tag} (python.abi): set python.abi to match what the project "
                         f"builds")
    requires: list[str] = []
    users = sorted(rel for rel, deps in elves.items()
                   if any(TORCH_SONAMES.match(n) for n in deps))
    pin = torch_pin(w.torch) if w.torch else ""
    if users and pin:
        requires.append(pin)
        said.append(f"{', '.join(users)} link(s) libtorch: requires {pin} "
                    f"(built against torch {w.torch})")
    elif users:
        said.append(f"{', '.join(users)} link(s) libtorch, but the build interpreter's "
                    f"torch version is unknown: no torch pin")
    nvidia = runtime.requirements(sorted({n for d in elves.values() for n in d}), w.toolkit)
    if nvidia:
        requires += nvidia
        said.append(f"CUDA {w.toolkit} runtime libraries from NVIDIA's wheels: "
                    f"requires {', '.join(nvidia)}")
    meta = _with_headers(meta, w.name, [*requires, *w.requires] if w.from_wheel else requires)
    info = f"{dist_name(w.name)}-{w.version}.dist-info"
    members = [m for m in members if m[0] not in (f"{info}/METADATA", f"{info}/variant.json")]
    members.append((f"{info}/METADATA", meta.encode("utf-8"), 0o644))
    if w.variant_label:  # named in the file name when the wheel is finished
        members.append((f"{info}/variant.json",
                        variants.variant_json(w.variant_properties, w.variant_label)
                        .encode("utf-8"), 0o644))
        said.append(f"variant {w.variant_label}: {'; '.join(w.variant_properties)}")
    wheel = write_wheel(members, raw_dir, w.name, w.version, tag)
    said.append(f"wrote {wheel.name}")
    return wheel, said, bool(elves)


def finish(w: WheelBuild, repaired: bool) -> Path:
    """Move the final wheel (repaired, or as written) into the wheel folder, replacing
    what an earlier build of the same variant left there; returns it."""
    folder = Path(w.out_dir)
    src = folder / (REPAIRED if repaired else RAW)
    made = sorted(src.glob("*.whl"))
    if len(made) != 1:
        raise ValueError(f"expected one wheel in {src}, found {len(made)}")
    seal(made[0], w.provenance, w.gpu_archs, promised(w), w.compress_mode)
    dist = w.name.replace("-", "_").lower() + "-"
    for old in folder.glob("*.whl"):
        if old.name.lower().startswith(dist):
            writer.remove(old)
    # a variant wheel's label goes last (PEP 825), after auditwheel has named the tags
    final = folder / (made[0].name[:-len(".whl")] + f"-{w.variant_label}.whl"
                      if w.variant_label else made[0].name)
    writer.move(made[0], final)
    writer.remove(folder / RAW)
    writer.remove(folder / REPAIRED)
    return final


def promised(w: WheelBuild) -> MinimumDriver | None:
    """The minimum driver the plan stated for the wheel's binaries (None: not CUDA)."""
    return MinimumDriver(w.min_driver, w.min_driver_linux, w.min_driver_why) \
        if w.min_driver else None


def _gpu_record(members: list[Member], planned: MinimumDriver | None,
                compress_mode: str) -> str:
    """``<dist-info>/builder.json``: the minimum driver the wheel's binaries need (the
    newest of theirs), what the plan stated, the compression mode, and each CUDA
    binary's code and driver; "" when the wheel has no GPU code."""
    import json

    per_file = checks.drivers(members)
    if not per_file:
        return ""
    code = checks.gpu_code(members)
    overall = newest(list(per_file.values()))
    assert overall is not None
    doc = {"gpu": {
        "minimum_driver": overall.to_json(),
        **({"planned_driver": planned.to_json()} if planned else {}),
        **({"compress_mode": compress_mode} if compress_mode else {}),
        "binaries": {rel: {"code": code.get(rel, ""), "minimum_driver": need.to_json()}
                     for rel, need in sorted(per_file.items())}}}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def seal(whl: Path, provenance: tuple[tuple[str, str, str, str], ...] = (),
         gpu_archs: tuple[str, ...] = (), planned: MinimumDriver | None = None,
         compress_mode: str = "") -> list[str]:
    """Check a finished wheel (:mod:`builder.wheels.checks`) and add its SBOM
    (:mod:`builder.wheels.sbom`) and, for GPU code, ``<dist-info>/builder.json`` with
    the minimum driver it needs, rewriting it in place; raises ValueError naming every
    file and symbol at fault.  Returns the SBOM's shared objects (for the log)."""
    dist, version, tag = whl.name[:-len(".whl")].split("-", 2)
    info = f"{dist}-{version}.dist-info"
    members = [m for m in read_wheel(whl)
               if m[0] not in (f"{info}/sboms/{SBOM_NAME}", f"{info}/{BUILDER_JSON}")]
    meta = next((d.decode("utf-8") for r, d, _ in members if r == f"{info}/METADATA"), "")
    name = next((x.split(":", 1)[1].strip() for x in meta.splitlines()
                 if x.startswith("Name:")), dist)
    platforms = tag.split("-")[-1].split(".")
    problems = checks.check_symbols(members, platforms) + \
        checks.check_torch_pin(members, meta) + checks.check_gpu_code(members, gpu_archs) + \
        checks.check_driver(members, planned)
    py_tag, abi_tag = tag.split("-")[:2]
    if abi_tag == "abi3":
        problems += checks.check_abi3(members, py_tag)
    if problems:
        raise ValueError(f"{whl.name} fails its checks:\n  " + "\n  ".join(problems) +
                         "\n  fix: build with an older toolchain (a manylinux container) for "
                         "symbol versions; a torch extension needs torch in the build "
                         "interpreter for its pin; GPU code must match backends.<name>.archs "
                         "(a flag adding -gencode/-arch in the project drifts from it); a "
                         "binary needing a newer driver than planned was built with another "
                         "toolkit or compression (backends.<name>.compress_mode); an "
                         "abi3 extension must keep to the limited API of python.limited_api")
    text = sbom_json(name, version, members, provenance, checks.gpu_code(members))
    missing = checks.check_sbom(members, text)
    if missing:  # the SBOM writer and the wheel disagree: never ship that
        raise ValueError(f"{whl.name}: SBOM incomplete:\n  " + "\n  ".join(missing))
    members.append((f"{info}/sboms/{SBOM_NAME}", text.encode("utf-8"), 0o644))
    record = _gpu_record(members, planned, compress_mode)
    if record:
        members.append((f"{info}/{BUILDER_JSON}", record.encode("utf-8"), 0o644))
    tmp = whl.parent / ".sealed"
    writer.remove(tmp)
    try:
        writer.move(write_wheel(members, tmp, name, version, tag), whl)
    finally:
        writer.remove(tmp)
    return [rel for rel, _ in shared_objects(members)]


def find(w: WheelBuild) -> Path | None:
    """The wheel a wheel step made (None before it has run)."""
    folder = Path(w.out_dir)
    pattern = w.glob
    hits = sorted(p for p in folder.glob("*.whl") if fnmatch(p.name, pattern)) \
        if folder.is_dir() else []
    return hits[-1] if hits else None


_TOO_NEW = re.compile(r"too-recent versioned symbols", re.I)


def explain(tail: list[str], policy: str) -> str:
    """Why ``auditwheel repair`` refused, in words a maintainer can act on."""
    text = "\n".join(tail)
    symbols = sorted(set(re.findall(r"\b(GLIBC(?:XX)?_[0-9.]+|CXXABI_[0-9.]+)\b", text)))
    if _TOO_NEW.search(text):
        extra = f" ({', '.join(symbols)})" if symbols else ""
        return (f"the wheel cannot be {policy}: its binaries use symbol versions newer than "
                f"that policy allows{extra} — the compiler's glibc/libstdc++ is too new. "
                f"Build with an older toolchain (e.g. in a manylinux container), or set "
                f"wheel.manylinux: auto to take the oldest policy these binaries satisfy")
    missing = re.findall(r'required library "([^"]+)" could not be located', text, re.I)
    if missing:
        return ("auditwheel cannot find a library the wheel needs"
                + (f" ({', '.join(sorted(set(missing)))})" if missing else "")
                + "; add its folder to the install tree, or list it in wheel.exclude if the "
                  "runtime provides it")
    return ("auditwheel refused the wheel; the log says why (set wheel.manylinux: none to "
            "keep a linux wheel for local use only)")
