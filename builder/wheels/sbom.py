"""A software bill of materials in every wheel (PEP 770: ``<dist-info>/sboms/``), in
CycloneDX written by ``cyclonedx-python-lib``.

It lists what a user of the wheel must be able to trace:

* every shared object in the wheel (the package's own, any auditwheel grafted) with the
  sha256 of the bytes the wheel holds (and, for CUDA binaries, the SASS/PTX archs
  inside) — computed from the final wheel, after repair and RPATH changes, so a file
  changed after the fact no longer matches;
* the recipe's sources (a folder's content digest, a git commit, an archive's sha256);
* the compilers the variant was built with, by name, version and path;
* the Conan packages and required recipes it was built against.

Provenance (the last three) is decided at plan time and travels in the wheel step's
payload as ``(kind, name, version, detail)`` rows; the shared objects are read here.
"""

from __future__ import annotations

import hashlib
import json
import warnings

from builder.wheels.build import Member
from builder.wheels.elf import is_elf

__all__ = ["SBOM_NAME", "sbom_json", "shared_objects"]

SBOM_NAME = "builder.cdx.json"  # under <dist-info>/sboms/


def shared_objects(members: list[Member]) -> list[tuple[str, str]]:
    """(path in the wheel, sha256) of every ELF file among the members."""
    return sorted((rel, hashlib.sha256(data).hexdigest())
                  for rel, data, _ in members if is_elf(data))


def sbom_json(name: str, version: str, members: list[Member],
              provenance: tuple[tuple[str, str, str, str], ...],
              gpu_code: dict[str, str] | None = None) -> str:
    """The CycloneDX 1.6 JSON document for a wheel with these members; ``gpu_code``: the
    GPU code manifest of the CUDA binaries among them (a property of each)."""
    try:
        from cyclonedx.model import HashAlgorithm, HashType, Property
        from cyclonedx.model.bom import Bom
        from cyclonedx.model.component import Component, ComponentScope, ComponentType
        from cyclonedx.output.json import JsonV1Dot6
    except ImportError:
        raise ValueError("every wheel carries an SBOM, written by cyclonedx-python-lib, "
                         "which is not installed: pip install 'builder[wheels]'") from None

    bom = Bom()
    bom.metadata.component = root = Component(
        name=name, version=version, type=ComponentType.LIBRARY, bom_ref=f"{name}@{version}")
    for rel, sha in shared_objects(members):
        gpu = (gpu_code or {}).get(rel)
        comp = Component(name=rel, type=ComponentType.FILE, bom_ref=f"file:{rel}",
                         hashes=[HashType(alg=HashAlgorithm.SHA_256, content=sha)],
                         properties=[Property(name="builder:gpu-code", value=gpu)]
                         if gpu else [])
        bom.components.add(comp)
        bom.register_dependency(root, [comp])
    kinds = {"source": ComponentType.LIBRARY, "compiler": ComponentType.APPLICATION,
             "conan": ComponentType.LIBRARY, "recipe": ComponentType.LIBRARY}
    for kind, dep, ver, detail in provenance:
        props = [Property(name="builder:role", value=kind)]
        if detail:
            props.append(Property(name="builder:detail", value=detail))
        hashes = [HashType(alg=HashAlgorithm.SHA_256, content=ver)] \
            if kind == "source" and len(ver) == 64 else []
        made = Component(
            name=dep, version=None if hashes else (ver or None),
            type=kinds.get(kind, ComponentType.LIBRARY), bom_ref=f"{kind}:{dep}",
            scope=ComponentScope.EXCLUDED if kind == "compiler" else None,
            hashes=hashes, properties=props)
        bom.components.add(made)
        bom.register_dependency(root, [made])
    with warnings.catch_warnings():
        # a wheel with no binary and no recorded provenance has no dependencies at all:
        # an empty graph is the truth, not an incomplete one
        warnings.filterwarnings("ignore", message=".*has no defined dependencies.*")
        text = JsonV1Dot6(bom).output_as_string(indent=2)
    json.loads(text)  # the library's output, checked to be one JSON document
    return text + "\n"
