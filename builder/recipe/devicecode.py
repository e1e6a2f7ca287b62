"""The semantic checks of a backend's device-code settings (``backends.<name>``): its
compression mode (``compress_mode``, cuda only) and its kernel formats — each a value the
backend itself lists (:class:`builder.backends.Backend`)."""

from __future__ import annotations

from typing import Any

from builder.backends import Backend
from builder.recipe.diags import Diags

__all__ = ["check_device_code"]


def check_device_code(bname: str, spec: dict[str, Any], be: Backend, d: Diags) -> None:
    """Settings of the backend's device code: its compression mode, its kernel formats."""
    mode = spec.get("compress_mode")
    if mode is not None and mode not in be.compress_modes():
        d.add(("backends", bname, "compress_mode"), f"compress_mode '{mode}': the "
              f"{be.name} backend has no device-code compression" if not
              be.compress_modes() else f"'{mode}' is not a {be.name} compress_mode",
              "remove it (it applies to cuda backends)" if not be.compress_modes() else
              f"one of: {', '.join(be.compress_modes())}")
    for i, fmt in enumerate(spec.get("formats") or ()):
        if fmt not in be.kernel_formats():
            d.add(("backends", bname, "formats", i), f"'{fmt}' is not a {bname} kernel "
                  f"format", f"{bname} formats: {', '.join(be.kernel_formats()) or 'none'}")
