"""Variant wheels (PEP 817/825 drafts, written with ``variantlib``): one wheel per GPU
arch of a CUDA build, each compiled for that arch alone, which an installer with variant
support (uv ``--preview-features wheel-variants``) picks for the machine's GPU; the
ordinary all-arch wheel stays the fallback that pip and other installers take.

Terms:

* **label** — the variant's stable, readable name in its file name
  (``llaisys_cu13-0.1.0-py3-none-manylinux_2_38_x86_64-cu13_sm90.whl``): the toolkit
  major and the arch; it never changes between builds of the same arch.
* **properties** — what the installer's NVIDIA provider compares with the machine:
  ``nvidia :: sm_arch :: 90_real`` (SASS for compute capability 9.0; the provider
  accepts it on any 9.x GPU, and an 8.0 build on 8.6 or 8.9, as CUDA does) and the
  driver's CUDA version bounds ``cuda_version_lower_bound`` (the minimum driver the
  plan states, :mod:`builder.wheels.driver`: the toolkit's major.minor, since its PTX
  needs that driver) and
  ``cuda_version_upper_bound`` (the next major, excluded).
* **variant.json** — the wheel's ``*.dist-info/variant.json`` with those properties and
  the provider declaration (``builder/resources/nvidia_wheels.json``); the index's
  ``{name}-{version}-variants.json`` merges them (:mod:`builder.remote.indexdir`).
"""

from __future__ import annotations

import re

from builder.resources import data_table

__all__ = ["label", "properties", "supported", "variant_json"]


def _provider() -> dict[str, object]:
    table: dict[str, object] = data_table("nvidia_wheels.json")["variant_provider"]
    return table


def supported(kind: str) -> bool:
    """Whether a backend kind's builds get variant wheels."""
    kinds = _provider()["backend_kinds"]
    return isinstance(kinds, list) and kind in kinds


def _cc(arch: str) -> str:
    """``sm_90a`` → ``90``."""
    m = re.match(r"^sm_(\d+)[af]?$", arch)
    if m is None:
        raise ValueError(f"not a CUDA arch: {arch!r}")
    return m.group(1)


def label(toolkit: str, arch: str) -> str:
    """``13.0.88``, ``sm_90`` → ``cu13_sm90`` (suffixed archs keep their suffix)."""
    return f"cu{toolkit.split('.', maxsplit=1)[0]}_{arch.replace('_', '')}"


def properties(toolkit: str, arch: str, lower: str = "") -> tuple[str, ...]:
    """The variant properties of a build of ``arch`` with CUDA ``toolkit``; ``lower``: the
    CUDA release of the minimum driver the plan states (builder.wheels.driver), else
    the toolkit's major.minor."""
    major, minor = [*toolkit.split("."), "0"][:2]
    ns = str(_provider()["namespace"])
    return (f"{ns} :: cuda_version_lower_bound :: {lower or f'{major}.{minor}'}",
            f"{ns} :: cuda_version_upper_bound :: {int(major) + 1}",
            f"{ns} :: sm_arch :: {_cc(arch)}_real")


def variant_json(props: tuple[str, ...], name: str) -> str:
    """The text of ``*.dist-info/variant.json`` for a variant with these properties and
    this label."""
    try:
        # variantlib ships no type information (no py.typed)
        from variantlib.api import (  # type: ignore[import-untyped]
            VariantDescription,
            VariantProperty,
            make_variant_dist_info,
        )
        from variantlib.models.variant_info import (  # type: ignore[import-untyped]
            ProviderInfo,
            VariantInfo,
        )
    except ImportError:
        raise ValueError("variant wheels are written with variantlib, which is not "
                         "installed: pip install 'builder[wheels]'") from None
    p = _provider()
    requires = p["requires"]
    assert isinstance(requires, list)
    info = VariantInfo(namespace_priorities=[str(p["namespace"])],
                       providers={str(p["namespace"]): ProviderInfo(
                           plugin_api=str(p["plugin_api"]), requires=list(requires))})
    vdesc = VariantDescription(properties=[VariantProperty.from_str(x) for x in props],
                               label=name)
    return str(make_variant_dist_info(vdesc, variant_info=info))
